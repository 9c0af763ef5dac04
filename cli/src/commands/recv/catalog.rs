//! `qtrace recv --max-catalog-bytes N`: the largest sender header (catalog)
//! the receiver takes, `ReceiverConfig::max_catalog_len`. It bounds the
//! receiver's memory per tracked and per parked sender (RELIABILITY.md,
//! "Receiver memory"), so an operator lowers it to lower the bound.

use std::fmt;

/// The largest header a reader of the library takes (4 MiB: its wire
/// module's header limit, not public); a larger cap would change nothing.
const MAX_HEADER_LEN: usize = 4 << 20;

/// Why a `--max-catalog-bytes` value is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CatalogCapError {
    /// Not a whole number of bytes (with an optional `KiB`/`MiB` unit).
    NotASize(String),
    /// Zero, or above the largest header any reader takes.
    OutOfRange(u64),
}

impl fmt::Display for CatalogCapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogCapError::NotASize(t) => write!(
                f,
                "{t:?} is not a size: give bytes (65536) or a whole number of KiB or MiB (64KiB, 1MiB)"
            ),
            CatalogCapError::OutOfRange(n) => write!(
                f,
                "{n} bytes: give at least 1 and at most {MAX_HEADER_LEN} (4MiB, the largest header a reader takes)"
            ),
        }
    }
}

impl std::error::Error for CatalogCapError {}

/// Parses a `--max-catalog-bytes` value: bytes, `KiB` or `MiB`, in
/// `1..=MAX_HEADER_LEN`.
///
/// # Errors
/// [`CatalogCapError`] for anything else.
pub(crate) fn parse_catalog_cap(text: &str) -> Result<usize, CatalogCapError> {
    let t = text.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        _ => return Err(CatalogCapError::NotASize(text.to_string())),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| CatalogCapError::NotASize(text.to_string()))?;
    let bytes = n.checked_shl(shift).filter(|b| b >> shift == n);
    match bytes {
        Some(b) if b >= 1 && b <= MAX_HEADER_LEN as u64 => Ok(b as usize),
        Some(b) => Err(CatalogCapError::OutOfRange(b)),
        None => Err(CatalogCapError::OutOfRange(u64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_catalog_cap, CatalogCapError};

    #[test]
    fn catalog_caps_parse_in_bytes_kib_and_mib() {
        assert_eq!(parse_catalog_cap("4096"), Ok(4096));
        assert_eq!(parse_catalog_cap("64KiB"), Ok(64 << 10));
        assert_eq!(parse_catalog_cap("1MiB"), Ok(1 << 20));
        assert_eq!(parse_catalog_cap("4MiB"), Ok(4 << 20));
        assert_eq!(parse_catalog_cap("1"), Ok(1));
    }

    #[test]
    fn bad_catalog_caps_are_typed_errors() {
        assert_eq!(parse_catalog_cap("0"), Err(CatalogCapError::OutOfRange(0)));
        assert_eq!(
            parse_catalog_cap("5MiB"),
            Err(CatalogCapError::OutOfRange(5 << 20))
        );
        assert_eq!(
            parse_catalog_cap("4194305"),
            Err(CatalogCapError::OutOfRange(4_194_305))
        );
        assert_eq!(
            parse_catalog_cap("99999999999999999999MiB"),
            Err(CatalogCapError::NotASize("99999999999999999999MiB".into()))
        );
        assert_eq!(
            parse_catalog_cap("17592186044416MiB"),
            Err(CatalogCapError::OutOfRange(u64::MAX))
        );
        for bad in ["", "-1", "1.5KiB", "1GB", "many", "64 kib"] {
            assert_eq!(
                parse_catalog_cap(bad),
                Err(CatalogCapError::NotASize(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            CatalogCapError::OutOfRange(0).to_string(),
            "0 bytes: give at least 1 and at most 4194304 (4MiB, the largest header a reader takes)"
        );
    }
}
