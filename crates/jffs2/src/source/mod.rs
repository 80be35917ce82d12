//! source (in progress)
