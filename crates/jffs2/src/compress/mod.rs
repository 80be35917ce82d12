//! compress (in progress)
