//! simlsh: random-hyperplane locality-sensitive hashing ("simhash").
#![deny(missing_docs)]

pub mod error;
pub mod estimate;

pub use error::{Error, Result};
