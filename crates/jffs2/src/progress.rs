//! Progress reporting, one type for every long operation of the library.
//!
//! A long operation (the flash walk of `fsck::check`, the writing of `convert::convert`)
//! reports `(done, total)` in its own units through a [`Progress`] given in its options; the
//! command-line tools draw a bar from it when stderr is a terminal.

use std::fmt;
use std::sync::Arc;

/// A progress callback, `(done, total)`; called from any thread, so it is `Send + Sync`.
/// Cloning it is cheap (the callback is shared).
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(u64, u64) + Send + Sync>);

impl Progress {
    /// A progress callback calling `f(done, total)`.
    pub fn new(f: impl Fn(u64, u64) + Send + Sync + 'static) -> Progress {
        Progress(Arc::new(f))
    }

    /// Reports that `done` of `total` units are done.
    pub fn report(&self, done: u64, total: u64) {
        (self.0)(done, total)
    }

    /// The callback, for code that takes a plain closure reference.
    pub fn as_fn(&self) -> &(dyn Fn(u64, u64) + Send + Sync) {
        &*self.0
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress(..)")
    }
}
