//! `simlsh serve`: an HTTP/1.1 + JSON near-duplicate lookup service over a [`simlsh::store::Store`].
