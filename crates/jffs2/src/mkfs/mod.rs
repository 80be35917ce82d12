//! mkfs (in progress)
