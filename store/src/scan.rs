//! What a folder of tables holds already: the part numbers in use (a new
//! part takes the next one, so nothing is overwritten) and the temps of
//! parts never finished.

use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::part::part_number;
use crate::schema::Table;

/// A part file found under a folder of tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its path.
    pub path: PathBuf,
    /// Its table.
    pub table: Table,
    /// Its part number.
    pub number: u64,
    /// Whether it is an unfinished temp (`.part-N.parquet.tmp`).
    pub temp: bool,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time.
    pub modified: std::time::SystemTime,
}

/// Every part and temp under `root`'s table folders (any depth).
///
/// # Errors
/// [`StoreError::Io`] when a folder cannot be read (a missing one holds
/// nothing).
pub fn scan(root: &Path) -> Result<Vec<Found>, StoreError> {
    let mut found = Vec::new();
    for table in Table::ALL {
        walk(&root.join(table.name()), table, &mut found)?;
    }
    found.sort_by_key(|f| (f.number, f.table.name()));
    Ok(found)
}

fn walk(dir: &Path, table: Table, found: &mut Vec<Found>) -> Result<(), StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io("read the folder", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read the folder", dir, e))?;
        let path = entry.path();
        let meta = match entry.metadata() {
            Ok(m) => m,
            Err(_) => continue, // deleted meanwhile (retention)
        };
        if meta.is_dir() {
            walk(&path, table, found)?;
            continue;
        }
        let name = entry.file_name();
        if let Some((number, temp)) = part_number(&name.to_string_lossy()) {
            found.push(Found {
                path,
                table,
                number,
                temp,
                size: meta.len(),
                modified: meta.modified().unwrap_or(std::time::UNIX_EPOCH),
            });
        }
    }
    Ok(())
}

/// The number a new part under `root` takes: one past every part and temp
/// there (0 in a new folder).
///
/// # Errors
/// [`StoreError::Io`] when a folder cannot be read.
pub fn next_part_number(root: &Path) -> Result<u64, StoreError> {
    Ok(scan(root)?.iter().map(|f| f.number + 1).max().unwrap_or(0))
}
