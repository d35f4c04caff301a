//! One module per subcommand.

pub mod bench;
pub mod dedup;
pub mod index;
