//! One module per subcommand.

pub mod bench;
pub mod cluster;
pub mod dedup;
pub mod eval;
pub mod index;
pub mod knn;
pub mod serve;
pub mod sign;
pub mod store;
