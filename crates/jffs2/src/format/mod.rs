//! format (in progress)
