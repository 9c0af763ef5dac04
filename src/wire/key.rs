//! The key of keyed datagrams ([`DatagramKey`], feature `keys`): 32 bytes,
//! its 16-bit id, read from a file only its owner can read.

use std::fmt;
use std::io;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::model::io_error::IoError;

/// A key that authenticates datagrams (FORMAT.md 2.6): 32 secret bytes held
/// by a sender ([`UdpParams::with_key`](crate::queues::UdpParams::with_key))
/// and its receiver ([`ReceiverConfig::keys`](crate::receiver::ReceiverConfig::keys)).
/// Its id, sent in every datagram so a receiver holding several keys knows
/// which to check, is the first two bytes of HMAC-SHA256(key, `qtrace key
/// id`). `Debug` shows the id, never the key.
///
/// ```
/// use qtrace::wire::DatagramKey;
///
/// let key = DatagramKey::from_bytes([7; 32]);
/// assert_eq!(key, DatagramKey::from_bytes([7; 32]));
/// assert_ne!(key.id(), DatagramKey::from_bytes([8; 32]).id());
/// assert_eq!(format!("{key:?}"), format!("DatagramKey {{ id: {:#06x}, .. }}", key.id()));
/// ```
#[derive(Clone)]
pub struct DatagramKey {
    bytes: [u8; DatagramKey::LEN],
    id: u16,
    /// HMAC-SHA256 keyed once (its inner and outer pads hashed): each
    /// datagram clones it.
    mac: Hmac<Sha256>,
}

impl DatagramKey {
    /// The length of a key, in bytes (what `qtrace keygen` writes).
    pub const LEN: usize = 32;

    /// The key made of `bytes` (32 random bytes: never a password).
    pub fn from_bytes(bytes: [u8; DatagramKey::LEN]) -> Self {
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(&bytes).expect("HMAC takes any key length");
        let mut id_mac = mac.clone();
        id_mac.update(b"qtrace key id");
        let digest = id_mac.finalize().into_bytes();
        DatagramKey {
            bytes,
            id: u16::from_be_bytes([digest[0], digest[1]]),
            mac,
        }
    }

    /// Reads a key file: exactly 32 bytes (`qtrace keygen FILE` writes one),
    /// that neither its group nor others may read or write (as ssh requires
    /// of a private key).
    ///
    /// ```
    /// use qtrace::wire::DatagramKey;
    /// # #[cfg(unix)] {
    /// use std::os::unix::fs::PermissionsExt;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("stream.key");
    /// std::fs::write(&path, [7u8; 32])?;
    /// std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    /// let e = DatagramKey::from_file(&path).unwrap_err();
    /// assert!(e.to_string().contains("chmod 600"));
    /// std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    /// assert_eq!(DatagramKey::from_file(&path)?, DatagramKey::from_bytes([7; 32]));
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`IoError`] naming the file when it cannot be read, when its group or
    /// others have any access to it (its mode and `chmod 600 FILE` are in
    /// the message), or when it is not 32 bytes long.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, IoError> {
        let path = path.as_ref();
        let fail = |source: io::Error| IoError::new("read the key file", path, source);
        let file = std::fs::File::open(path).map_err(fail)?;
        let meta = file.metadata().map_err(fail)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(fail(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "its mode is {mode:04o}: its group or others can read or change it, so \
                         it is refused (as ssh refuses such a private key); run `chmod 600 {}` \
                         (and make a new key with `qtrace keygen` if others may have read it)",
                        path.display()
                    ),
                )));
            }
        }
        if meta.len() != DatagramKey::LEN as u64 {
            return Err(fail(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it holds {} bytes, a key is {} random bytes: make one with `qtrace keygen FILE`",
                    meta.len(),
                    DatagramKey::LEN
                ),
            )));
        }
        let mut bytes = [0u8; DatagramKey::LEN];
        io::Read::read_exact(&mut &file, &mut bytes).map_err(fail)?;
        Ok(DatagramKey::from_bytes(bytes))
    }

    /// The key id sent in every datagram (FORMAT.md 2.6).
    pub fn id(&self) -> u16 {
        self.id
    }

    pub(crate) fn mac(&self) -> &Hmac<Sha256> {
        &self.mac
    }
}

impl PartialEq for DatagramKey {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for DatagramKey {}

impl fmt::Debug for DatagramKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatagramKey {{ id: {:#06x}, .. }}", self.id)
    }
}
