//! layout (in progress)
