//! Atomic file writes: a crash at any moment leaves either the old file or the new one.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes a file atomically: `write` fills a temporary file in the same directory, which is
/// flushed, `fsync`ed and renamed over `path`; the directory is then `fsync`ed (on Unix). If
/// `write` or any step fails, the temporary file is removed and `path` is untouched.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io(std::io::Error::other("not a file path")))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        write(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        #[cfg(unix)]
        File::open(&dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = std::env::temp_dir().join(format!("simlsh-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.bin");
        write_atomic(&p, |w| w.write_all(b"old")).unwrap();
        let err = write_atomic(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("interrupted"))
        });
        assert!(matches!(err, Err(Error::Io { .. })));
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "temporary file left behind"
        );
        write_atomic(&p, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }
}
