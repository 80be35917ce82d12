//! Unit tests of the checks on crafted images.
