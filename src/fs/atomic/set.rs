//! Several outputs written as a set: every one is written to its temporary first, and they
//! replace their destinations only when all of them are complete.

use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::stage::{self, Dest, Temp};
use crate::error::{Error, Result};

/// An output written to its temporary, waiting for [`OutputSet::commit`].
struct Staged {
    /// The path the caller gave, for errors.
    path: PathBuf,
    /// Where it goes.
    dest: Dest,
    temp: Temp,
}

/// Outputs that replace their files together or not at all.
///
/// [`write`](OutputSet::write) writes an output to a temporary file at once (beside its
/// destination, in the system's temporary directory for a pipe or a device) and fsyncs it;
/// nothing is visible at the destination yet. [`commit`](OutputSet::commit) then renames every
/// temporary over its destination (and copies the staged content of pipes and devices into
/// them). If any write fails, or the set is dropped without a commit, no destination is
/// touched and the temporaries are removed.
///
/// Each rename is atomic, and they follow each other within microseconds once every output
/// is complete; a crash between two renames can still leave the first outputs replaced and
/// the last ones old (nothing in POSIX renames several files at once).
///
/// ```
/// use std::io::Write;
/// use simlsh::fs::OutputSet;
///
/// let dir = std::env::temp_dir().join(format!("simlsh-doc-set-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let mut set = OutputSet::new();
/// set.write(&dir.join("pairs.tsv"), |w| writeln!(w, "0\t1"))?;
/// set.write(&dir.join("stats.json"), |w| writeln!(w, "{{}}"))?;
/// set.commit()?; // both appear now, or neither did
/// assert!(dir.join("pairs.tsv").exists() && dir.join("stats.json").exists());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct OutputSet {
    staged: Vec<Staged>,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl OutputSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes the output of `path` (through `write`) to a temporary file, fsynced; it replaces
    /// `path` at [`commit`](OutputSet::commit). An error of `write` or of the file system is
    /// returned at once, naming `path`; the set is then best dropped (nothing is replaced).
    pub fn write(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<()> {
        let err = io_err(path);
        let dest = stage::resolve(path).map_err(io_err(path))?;
        if self.staged.iter().any(|s| s.dest == dest) {
            return Err(Error::SameFile {
                first: self
                    .staged
                    .iter()
                    .find(|s| s.dest == dest)
                    .map(|s| s.path.clone())
                    .unwrap_or_default(),
                second: path.to_path_buf(),
                what: "two outputs",
            });
        }
        let (dir, name) = match &dest {
            Dest::Replace(p) => (stage::dir_of(p), p.clone()),
            Dest::Through { .. } => (std::env::temp_dir(), PathBuf::from("simlsh-output")),
        };
        let mut temp = stage::create(&dir, &name).map_err(io_err(path))?;
        if let Dest::Replace(p) = &dest {
            // Keep the permissions of the file replaced.
            if let Ok(m) = fs::metadata(p) {
                let _ = temp.file.set_permissions(m.permissions());
            }
        }
        let result = (|| {
            let mut w = BufWriter::with_capacity(1 << 20, &mut temp.file);
            write(&mut w)?;
            w.into_inner().map_err(|e| e.into_error())?.sync_all()
        })();
        result.map_err(err)?;
        self.staged.push(Staged {
            path: path.to_path_buf(),
            dest,
            temp,
        });
        Ok(())
    }

    /// Moves the outputs staged in `other` into this set (to be committed with it).
    ///
    /// # Errors
    /// [`Error::SameFile`] when an output of `other` is one of this set's; this set is then
    /// unchanged and `other`'s outputs are dropped (their temporaries removed).
    pub fn append(&mut self, other: OutputSet) -> Result<()> {
        for s in &other.staged {
            if let Some(first) = self.staged.iter().find(|t| t.dest == s.dest) {
                return Err(Error::SameFile {
                    first: first.path.clone(),
                    second: s.path.clone(),
                    what: "two outputs",
                });
            }
        }
        self.staged.extend(other.staged);
        Ok(())
    }

    /// The outputs staged so far.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    /// True when nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Replaces every destination by its output: renames for files (then fsyncs their
    /// directories), copies for pipes and devices. An error names the output it concerns; the
    /// outputs before it in the set have been replaced, those after it have not.
    pub fn commit(mut self) -> Result<()> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for s in &mut self.staged {
            match &s.dest {
                Dest::Replace(p) => {
                    fs::rename(&s.temp.path, p).map_err(io_err(&s.path))?;
                    s.temp.keep();
                    let d = stage::dir_of(p);
                    if !dirs.contains(&d) {
                        dirs.push(d);
                    }
                }
                Dest::Through { path, append } => {
                    let copy = || -> io::Result<()> {
                        let mut out = OpenOptions::new().append(*append).write(true).open(path)?;
                        let mut r = fs::File::open(&s.temp.path)?;
                        io::copy(&mut r, &mut out)?;
                        out.flush()
                    };
                    copy().map_err(io_err(&s.path))?;
                }
            }
        }
        for d in dirs {
            crate::fs::sync_dir(&d)?;
        }
        Ok(())
    }
}
