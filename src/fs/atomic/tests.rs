use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;
use crate::fs::lock::{lock_exclusive, try_lock_exclusive};

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-atomic-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// This test binary run again for the test `test` alone, with the variable `env.0` set to
/// `env.1` (telling the test to play the child), once it has printed `ready` (within a
/// minute).
fn child_ready(test: &str, env: (&str, &Path), ready: &str) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(env.0, env.1)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    let t = Instant::now();
    while !String::from_utf8_lossy(&seen).contains(ready) {
        let k = stdout.read(&mut buf).unwrap();
        assert!(
            k > 0 && t.elapsed() < Duration::from_secs(60),
            "child did not print `{ready}`"
        );
        seen.extend_from_slice(&buf[..k]);
    }
    // Kept open: a child that prints more must not meet a closed pipe.
    child.stdout = Some(stdout);
    child
}

/// The names in `d`, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn failed_write_leaves_the_old_file_and_no_temporary() {
    let d = dir("failed");
    let p = d.join("out.bin");
    write_atomic(&p, |w| w.write_all(b"old")).unwrap();
    let err = write_atomic(&p, |w| {
        w.write_all(b"partial")?;
        Err(std::io::Error::other("interrupted"))
    });
    assert!(matches!(err, Err(Error::Io { ref path, .. }) if path == &p));
    assert_eq!(fs::read(&p).unwrap(), b"old");
    assert_eq!(names(&d), vec!["out.bin"], "temporary file left behind");
    write_atomic(&p, |w| w.write_all(b"new")).unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"new");
    fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_is_kept_and_its_target_replaced() {
    use std::os::unix::fs::symlink;
    let d = dir("symlink");
    fs::create_dir(d.join("real")).unwrap();
    let target = d.join("real/index.bin");
    fs::write(&target, b"old").unwrap();
    // link -> real/index.bin (relative), link2 -> link (a chain).
    symlink("real/index.bin", d.join("link")).unwrap();
    symlink(d.join("link"), d.join("link2")).unwrap();
    write_atomic(&d.join("link2"), |w| w.write_all(b"new")).unwrap();
    assert!(
        fs::symlink_metadata(d.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs::symlink_metadata(d.join("link2"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read_link(d.join("link")).unwrap(),
        Path::new("real/index.bin")
    );
    assert_eq!(fs::read(&target).unwrap(), b"new");
    assert_eq!(names(&d), vec!["link", "link2", "real"]);
    assert_eq!(names(&d.join("real")), vec!["index.bin"]);
    // A dangling link: its target is created.
    symlink("real/new.bin", d.join("dangling")).unwrap();
    write_atomic(&d.join("dangling"), |w| w.write_all(b"x")).unwrap();
    assert!(
        fs::symlink_metadata(d.join("dangling"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(d.join("real/new.bin")).unwrap(), b"x");
    // A loop is an error, not a hang.
    symlink("loop2", d.join("loop1")).unwrap();
    symlink("loop1", d.join("loop2")).unwrap();
    assert!(write_atomic(&d.join("loop1"), |w| w.write_all(b"x")).is_err());
    fs::remove_dir_all(&d).unwrap();
}

/// Makes a FIFO with the system's `mkfifo`.
#[cfg(unix)]
fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

#[cfg(unix)]
fn read_fifo_in_background(p: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let p = p.to_path_buf();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        fs::File::open(&p).unwrap().read_to_end(&mut v).unwrap();
        v
    })
}

#[cfg(unix)]
#[test]
fn a_fifo_is_written_through_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let d = dir("fifo");
    let fifo = d.join("pipe");
    mkfifo(&fifo);
    let reader = read_fifo_in_background(&fifo);
    write_atomic(&fifo, |w| w.write_all(b"through the pipe")).unwrap();
    assert_eq!(reader.join().unwrap(), b"through the pipe");
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(&d), vec!["pipe"]);
    fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn dev_null_stays_a_character_device() {
    use std::os::unix::fs::FileTypeExt;
    write_atomic(Path::new("/dev/null"), |w| w.write_all(b"discarded")).unwrap();
    let mut set = OutputSet::new();
    set.write(Path::new("/dev/null"), |w| w.write_all(b"discarded"))
        .unwrap();
    set.commit().unwrap();
    let t = fs::symlink_metadata("/dev/null").unwrap().file_type();
    assert!(t.is_char_device(), "/dev/null is no longer a device: {t:?}");
}

#[cfg(unix)]
#[test]
fn the_permissions_of_a_replaced_file_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("mode");
    let p = d.join("script.sh");
    fs::write(&p, b"old").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o750)).unwrap();
    write_atomic(&p, |w| w.write_all(b"new")).unwrap();
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o750
    );
    fs::remove_dir_all(&d).unwrap();
}

/// In the child process of the next test: writes `out.bin` and never finishes.
fn killed_writer_child(out: &Path) {
    let _ = write_atomic(out, |w| {
        w.write_all(&vec![7u8; 1 << 20])?;
        w.flush()?;
        println!("writing");
        std::io::stdout().flush()?;
        std::thread::sleep(Duration::from_secs(600));
        Ok(())
    });
}

#[test]
fn temporaries_of_killed_writers_are_removed_and_live_ones_kept() {
    const CHILD: &str = "SIMLSH_ATOMIC_KILLED_WRITER";
    if let Ok(out) = std::env::var(CHILD) {
        killed_writer_child(Path::new(&out));
        return;
    }
    let d = dir("stale");
    let out = d.join("out.bin");
    // A writer killed in the middle of its write leaves its temporary.
    let mut child = child_ready(
        "fs::atomic::tests::temporaries_of_killed_writers_are_removed_and_live_ones_kept",
        (CHILD, &out),
        "writing",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let left = names(&d);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with(".out.bin.") && left[0].ends_with(".simlsh-tmp"));
    assert_eq!(fs::metadata(d.join(&left[0])).unwrap().len(), 1 << 20);
    // A live writer's temporary (its lock held here) and another file's stay.
    let live = d.join(".out.bin.1-1.simlsh-tmp");
    let held = fs::File::create(&live).unwrap();
    assert!(crate::fs::lock::flock(&held, false).unwrap());
    fs::write(d.join(".other.bin.5-5.simlsh-tmp"), b"not ours").unwrap();
    write_atomic(&out, |w| w.write_all(b"done")).unwrap();
    assert_eq!(fs::read(&out).unwrap(), b"done");
    assert_eq!(
        names(&d),
        vec![
            ".other.bin.5-5.simlsh-tmp",
            ".out.bin.1-1.simlsh-tmp",
            "out.bin"
        ]
    );
    drop(held);
    assert_eq!(clean_stale_temporaries(&out).unwrap(), 1);
    assert_eq!(names(&d), vec![".other.bin.5-5.simlsh-tmp", "out.bin"]);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_output_set_replaces_all_files_or_none() {
    let d = dir("set");
    let (a, b, c) = (d.join("a.tsv"), d.join("b.json"), d.join("c.npy"));
    for p in [&a, &b, &c] {
        fs::write(p, b"old").unwrap();
    }
    // The third output fails: none is replaced, no temporary is left.
    let mut set = OutputSet::new();
    set.write(&a, |w| w.write_all(b"new a")).unwrap();
    set.write(&b, |w| w.write_all(b"new b")).unwrap();
    let e = set.write(&c, |w| {
        w.write_all(b"half")?;
        Err(std::io::Error::other("disk full"))
    });
    assert!(matches!(e, Err(Error::Io { ref path, .. }) if path == &c));
    assert_eq!(set.len(), 2);
    drop(set);
    for p in [&a, &b, &c] {
        assert_eq!(fs::read(p).unwrap(), b"old");
    }
    assert_eq!(names(&d), vec!["a.tsv", "b.json", "c.npy"]);
    // Complete, but not committed: the same.
    let mut set = OutputSet::new();
    set.write(&a, |w| w.write_all(b"new a")).unwrap();
    drop(set);
    assert_eq!(fs::read(&a).unwrap(), b"old");
    assert_eq!(names(&d), vec!["a.tsv", "b.json", "c.npy"]);
    // Nothing is visible before the commit; everything after.
    let mut set = OutputSet::new();
    for (p, s) in [(&a, "new a"), (&b, "new b"), (&c, "new c")] {
        set.write(p, |w| w.write_all(s.as_bytes())).unwrap();
        assert_eq!(fs::read(p).unwrap(), b"old");
    }
    set.commit().unwrap();
    for (p, s) in [(&a, "new a"), (&b, "new b"), (&c, "new c")] {
        assert_eq!(fs::read(p).unwrap(), s.as_bytes());
    }
    assert_eq!(names(&d), vec!["a.tsv", "b.json", "c.npy"]);
    // The same destination twice is refused.
    let mut set = OutputSet::new();
    set.write(&a, |w| w.write_all(b"1")).unwrap();
    let e = set.write(&d.join("./a.tsv"), |w| w.write_all(b"2"));
    assert!(matches!(e, Err(Error::SameFile { .. })), "{e:?}");
    fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn an_output_set_stages_a_fifo_and_writes_it_at_commit() {
    use std::os::unix::fs::FileTypeExt;
    let d = dir("set-fifo");
    let fifo = d.join("pipe");
    mkfifo(&fifo);
    let file = d.join("f.txt");
    let mut set = OutputSet::new();
    set.write(&fifo, |w| w.write_all(b"to the pipe")).unwrap();
    set.write(&file, |w| w.write_all(b"to the file")).unwrap();
    let reader = read_fifo_in_background(&fifo);
    set.commit().unwrap();
    assert_eq!(reader.join().unwrap(), b"to the pipe");
    assert_eq!(fs::read(&file).unwrap(), b"to the file");
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn an_output_that_is_an_input_is_refused_by_device_and_inode() {
    use std::os::unix::fs::symlink;
    let d = dir("same");
    let input = d.join("in.npy");
    fs::write(&input, b"data").unwrap();
    symlink(&input, d.join("sym.npy")).unwrap();
    fs::hard_link(&input, d.join("hard.npy")).unwrap();
    let other = d.join("other.npy");
    fs::write(&other, b"x").unwrap();
    let same = |i: &Path, o: &Path| match check_distinct(&[i], &[o]) {
        Err(Error::SameFile {
            first,
            second,
            what,
        }) => {
            assert_eq!((first.as_path(), second.as_path()), (i, o));
            assert_eq!(what, "an input and an output");
            let msg = Error::SameFile {
                first,
                second,
                what,
            }
            .to_string();
            assert!(msg.contains("in.npy") && msg.contains(&o.display().to_string()));
            true
        }
        Ok(()) => false,
        Err(e) => panic!("{e}"),
    };
    assert!(same(&input, &input));
    assert!(same(&input, &d.join("sym.npy")));
    assert!(same(&input, &d.join("hard.npy")));
    assert!(same(&input, &d.join(".").join("in.npy")));
    assert!(!same(&input, &other));
    assert!(!same(&input, &d.join("missing.npy")));
    // Standard input, pipes and devices are not files.
    check_distinct(
        &[Path::new("-"), Path::new("/dev/stdin")],
        &[Path::new("/dev/null")],
    )
    .unwrap();
    // Two outputs: existing through a link, or new at the same place.
    let e = check_distinct(&[&input], &[&other, &d.join("./other.npy")]);
    assert!(
        matches!(
            e,
            Err(Error::SameFile {
                what: "two outputs",
                ..
            })
        ),
        "{e:?}"
    );
    symlink("new.npy", d.join("newlink")).unwrap();
    let e = check_distinct(&[], &[&d.join("new.npy"), &d.join("newlink")]);
    assert!(
        matches!(
            e,
            Err(Error::SameFile {
                what: "two outputs",
                ..
            })
        ),
        "{e:?}"
    );
    check_distinct(&[&input], &[&d.join("a.npy"), &d.join("b.npy")]).unwrap();
    fs::remove_dir_all(&d).unwrap();
}

/// Adds one to the counter in `p` (read, then write back after a pause that invites races).
fn increment(p: &Path) {
    let n: u64 = fs::read_to_string(p)
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(0);
    std::thread::sleep(Duration::from_micros(300));
    write_atomic(p, |w| write!(w, "{}", n + 1)).unwrap();
}

#[test]
fn the_exclusive_lock_serialises_read_modify_write() {
    let d = dir("lock");
    let p = d.join("index.simlsh");
    fs::write(&p, "0").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let p = p.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let _guard = lock_exclusive(&p).unwrap();
                    increment(&p);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(fs::read_to_string(&p).unwrap(), "100", "an update was lost");
    // The lock is the file's own: nothing is created beside it.
    assert_eq!(names(&d), vec!["index.simlsh"]);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_lock_excludes_other_processes_until_they_end() {
    const CHILD: &str = "SIMLSH_LOCK_HOLDER";
    if let Ok(p) = std::env::var(CHILD) {
        let _guard = lock_exclusive(Path::new(&p)).unwrap();
        println!("locked");
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let d = dir("lock-process");
    let p = d.join("index.simlsh");
    fs::write(&p, "0").unwrap();
    let mut child = child_ready(
        "fs::atomic::tests::the_lock_excludes_other_processes_until_they_end",
        (CHILD, &p),
        "locked",
    );
    assert!(
        try_lock_exclusive(&p).unwrap().is_none(),
        "held by the child"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // The system releases a dead process's lock.
    let g = lock_exclusive(&p).unwrap();
    assert_eq!(g.path(), p);
    drop(g);
    fs::remove_dir_all(&d).unwrap();
}

/// Locking needs an existing regular file and creates nothing: a missing file, a directory,
/// a FIFO or a device is an error that leaves its directory as it was (no `.NAME.lock`
/// beside `/dev/null` or in `/etc`).
#[test]
fn locking_creates_nothing_and_refuses_what_is_not_a_regular_file() {
    let d = dir("lock-refuse");
    let missing = d.join("missing.idx");
    assert!(matches!(lock_exclusive(&missing), Err(Error::Io { .. })));
    assert!(lock_exclusive(&d).is_err());
    #[cfg(unix)]
    {
        let fifo = d.join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // Refused at once, without waiting for a writer of the FIFO.
        assert!(lock_exclusive(&fifo).is_err());
        assert_eq!(names(&d), vec!["fifo"]);
        let before = names(Path::new("/dev"));
        assert!(lock_exclusive(Path::new("/dev/null")).is_err());
        assert_eq!(names(Path::new("/dev")), before);
    }
    fs::remove_dir_all(&d).unwrap();
}

/// A lock holder that replaces the file (as every write does, by renaming a new file over
/// it) hands the lock to the new file: a waiter that had opened the old file locks the new
/// one, so the read-modify-writes still follow one another.
#[test]
fn the_lock_follows_the_file_when_it_is_replaced() {
    let d = dir("lock-replace");
    let p = d.join("index.simlsh");
    fs::write(&p, "0").unwrap();
    let held = lock_exclusive(&p).unwrap();
    let waiter = {
        let p = p.clone();
        std::thread::spawn(move || {
            let _g = lock_exclusive(&p).unwrap();
            fs::read_to_string(&p).unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    write_atomic(&p, |w| write!(w, "1")).unwrap();
    drop(held);
    assert_eq!(waiter.join().unwrap(), "1");
    // The new file is locked like the old one was.
    let g = lock_exclusive(&p).unwrap();
    assert!(try_lock_exclusive(&p).unwrap().is_none());
    drop(g);
    fs::remove_dir_all(&d).unwrap();
}

/// The kernel's `protected_symlinks` rule, applied to links resolved here: in a sticky
/// world-writable directory (`/tmp`) a link is followed only when it belongs to the caller or
/// to the directory's owner, so a link planted by another user cannot make an output replace
/// a file in a folder only the caller may write. (The uids of other users need root to make;
/// otherwise only the caller's own link is checked.)
#[cfg(unix)]
#[test]
fn links_in_sticky_world_writable_directories_follow_the_kernels_rule() {
    use std::os::unix::fs::{PermissionsExt, lchown, symlink};
    let d = dir("sticky");
    let shared = d.join("shared");
    let private = d.join("private");
    fs::create_dir(&shared).unwrap();
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let target = private.join("secret");
    fs::write(&target, "kept").unwrap();
    let link = shared.join("out.tsv");
    symlink(&target, &link).unwrap();
    // The caller's own link is followed: the target is replaced, the link kept.
    write_atomic(&link, |w| write!(w, "mine")).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "mine");
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        fs::remove_dir_all(&d).unwrap();
        return;
    }
    // Another user's link: refused, the target untouched, nothing left behind.
    let other = 54_321;
    lchown(&link, Some(other), Some(other)).unwrap();
    let e = write_atomic(&link, |w| write!(w, "planted")).unwrap_err();
    assert!(
        matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied),
        "{e:?}"
    );
    assert!(e.to_string().contains("protected_symlinks"), "{e}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "mine");
    assert_eq!(names(&private), vec!["secret"]);
    assert_eq!(names(&shared), vec!["out.tsv"]);
    // The same for an output set.
    let mut set = OutputSet::new();
    assert!(set.write(&link, |w| write!(w, "planted")).is_err());
    // A link of the directory's owner is followed.
    lchown(&shared, Some(other), None).unwrap();
    write_atomic(&link, |w| write!(w, "owner")).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "owner");
    // Outside a sticky world-writable directory any link is followed, as the kernel does.
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    lchown(&shared, Some(0), None).unwrap();
    write_atomic(&link, |w| write!(w, "plain")).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "plain");
    fs::remove_dir_all(&d).unwrap();
}
