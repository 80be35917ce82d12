//! [`Name`]: a directory entry's name, kept without a heap allocation when short.
//!
//! The scan and the fs model keep one name per live entry, and hostile images have millions
//! of entries: a `Vec<u8>` costs its 24 bytes plus a heap block (32 bytes or more with the
//! allocator's header) for every name. Names of JFFS2 images are at most 254 bytes and are
//! nearly always short, so a [`Name`] keeps up to [`Name::INLINE`] bytes in its own 24 bytes
//! and boxes only longer ones.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Why a directory entry's name cannot be created on a host, if it cannot: empty, `.`, `..`,
/// containing `/` or NUL, or longer than `NAME_MAX` (255).
pub fn name_problem(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty name")
    } else if name == b"." || name == b".." {
        Some("name is a path step (\".\" or \"..\")")
    } else if name.contains(&b'/') {
        Some("name contains '/'")
    } else if name.contains(&0) {
        Some("name contains a NUL byte")
    } else if name.len() > 255 {
        Some("name longer than 255 bytes")
    } else {
        None
    }
}

/// A name as bytes (no NUL inside, as the kernel keeps it), 24 bytes in all; it dereferences
/// to `[u8]` and compares, orders and hashes exactly as that slice does.
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, buf: [u8; Name::INLINE] },
    Heap(Box<[u8]>),
}

impl Name {
    /// The longest name kept without a heap allocation.
    pub const INLINE: usize = 22;

    /// A copy of `bytes`.
    pub fn new(bytes: &[u8]) -> Name {
        if bytes.len() <= Name::INLINE {
            let mut buf = [0u8; Name::INLINE];
            buf[..bytes.len()].copy_from_slice(bytes);
            Name(Repr::Inline {
                len: bytes.len() as u8,
                buf,
            })
        } else {
            Name(Repr::Heap(bytes.into()))
        }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, buf } => &buf[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::new(&[])
    }
}

impl Deref for Name {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Name {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for Name {
    fn from(b: &[u8]) -> Name {
        Name::new(b)
    }
}

impl<const N: usize> From<&[u8; N]> for Name {
    fn from(b: &[u8; N]) -> Name {
        Name::new(b)
    }
}

impl From<Vec<u8>> for Name {
    fn from(b: Vec<u8>) -> Name {
        Name::new(&b)
    }
}

impl From<&Vec<u8>> for Name {
    fn from(b: &Vec<u8>) -> Name {
        Name::new(b)
    }
}

impl From<Name> for Vec<u8> {
    fn from(n: Name) -> Vec<u8> {
        n.as_bytes().to_vec()
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Name {}

impl PartialEq<[u8]> for Name {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<&[u8]> for Name {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_bytes() == *other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Name {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.as_bytes() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Name {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.as_bytes() == *other
    }
}

impl PartialEq<Vec<u8>> for Name {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_bytes() == other.as_slice()
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for Name {
    // As the slice hashes, so that maps keyed by `Name` can be looked up with a `&[u8]`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for Name {
    // As a `Vec<u8>` printed, which this replaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_bytes().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn h<T: Hash + ?Sized>(t: &T) -> u64 {
        let mut s = DefaultHasher::new();
        t.hash(&mut s);
        s.finish()
    }

    #[test]
    fn size_and_round_trip() {
        assert_eq!(std::mem::size_of::<Name>(), 24);
        for len in [0, 1, 21, 22, 23, 254] {
            let b: Vec<u8> = (0..len).map(|i| (i % 250 + 1) as u8).collect();
            let n = Name::from(b.as_slice());
            assert_eq!(&*n, b.as_slice());
            assert_eq!(n, b);
            assert_eq!(n.clone(), n);
            assert_eq!(h(&n), h(b.as_slice()));
            assert_eq!(format!("{n:?}"), format!("{b:?}"));
        }
    }

    #[test]
    fn orders_as_bytes() {
        let names: [&[u8]; 5] = [b"", b"a", b"ab", b"abcdefghijklmnopqrstuvwxyz", b"b"];
        for x in names {
            for y in names {
                assert_eq!(Name::from(x).cmp(&Name::from(y)), x.cmp(y));
            }
        }
    }
}
