#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::sync::Mutex;

use pretty_assertions::assert_eq;

use super::*;

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// The process's umask, read without changing it (setting it would race with other tests).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

/// Every name in a folder, sorted (temporary files included).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn ordinary(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write(path, "f", bytes, FileKind::Ordinary, Check::Anywhere)
}

#[test]
fn an_ordinary_file_keeps_its_mode_and_a_new_one_gets_the_usual_mode() {
    let (_d, dir) = tmp();
    let new = dir.join("a/b/new.txt");
    ordinary(&new, b"one").unwrap();
    assert_eq!(fs::read_to_string(&new).unwrap(), "one");
    assert_eq!(mode(&new), 0o666 & !umask());
    assert_eq!(mode(&dir.join("a/b")), 0o777 & !umask());

    let private = dir.join("private.toml");
    fs::write(&private, "key").unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
    ordinary(&private, b"new key").unwrap();
    assert_eq!(fs::read_to_string(&private).unwrap(), "new key");
    assert_eq!(mode(&private), 0o600);
    assert_eq!(names(&dir), ["a", "private.toml"], "no temporary file left");
}

#[test]
fn a_read_only_file_a_folder_or_a_pipe_is_refused_and_left_alone() {
    let (_d, dir) = tmp();
    let ro = dir.join("ro.txt");
    fs::write(&ro, "keep").unwrap();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(
        ordinary(&ro, b"x").unwrap_err().to_string(),
        "f is read-only; it was not changed (make it writable with chmod u+w first if it should be)"
    );
    assert_eq!(fs::read_to_string(&ro).unwrap(), "keep");
    fs::create_dir(dir.join("sub")).unwrap();
    assert_eq!(
        ordinary(&dir.join("sub"), b"x").unwrap_err().to_string(),
        "f is a directory, not a file"
    );
    assert_eq!(names(&dir), ["ro.txt", "sub"]);
    nix::unistd::mkfifo(
        &dir.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    assert_eq!(
        ordinary(&dir.join("pipe"), b"x").unwrap_err().to_string(),
        "f is not a regular file (a device, a pipe or a socket); it was not changed"
    );
    assert_eq!(names(&dir), ["pipe", "ro.txt", "sub"]);
}

#[test]
fn an_ordinary_file_is_written_through_its_symlink_and_the_link_stays() {
    let (_d, dir) = tmp();
    fs::create_dir(dir.join("real")).unwrap();
    fs::write(dir.join("real/target.txt"), "old").unwrap();
    symlink("real/target.txt", dir.join("link.txt")).unwrap();
    ordinary(&dir.join("link.txt"), b"new").unwrap();
    assert!(
        fs::symlink_metadata(dir.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read_to_string(dir.join("real/target.txt")).unwrap(),
        "new"
    );
    // A dangling link: its target is created.
    symlink("real/missing.txt", dir.join("dangling")).unwrap();
    ordinary(&dir.join("dangling"), b"made").unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("real/missing.txt")).unwrap(),
        "made"
    );
}

#[test]
fn a_private_file_is_0600_in_a_0700_folder_and_replaces_a_link() {
    let (_d, dir) = tmp();
    let file = dir.join(".mm/sessions/s.json");
    write(&file, "s", b"{}", FileKind::Private, Check::Anywhere).unwrap();
    assert_eq!(mode(&file), 0o600 & !umask());
    assert_eq!(mode(&dir.join(".mm/sessions")), 0o700 & !umask());
    assert_eq!(mode(&dir.join(".mm")), 0o777 & !umask());
    // A file of another mode becomes 0600 again.
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    write(&file, "s", b"{1}", FileKind::Private, Check::Anywhere).unwrap();
    assert_eq!(mode(&file), 0o600 & !umask());
    // A symlink in its place is replaced, not written through.
    fs::write(dir.join("elsewhere"), "keep").unwrap();
    let linked = dir.join(".mm/sessions/l.json");
    symlink(dir.join("elsewhere"), &linked).unwrap();
    write(&linked, "l", b"{2}", FileKind::Private, Check::Anywhere).unwrap();
    assert!(
        !fs::symlink_metadata(&linked)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&linked).unwrap(), "{2}");
    assert_eq!(fs::read_to_string(dir.join("elsewhere")).unwrap(), "keep");
}

#[test]
fn the_check_sees_every_folder_to_create_and_the_file_where_they_really_are() {
    let (_d, dir) = tmp();
    fs::create_dir(dir.join("real")).unwrap();
    symlink(dir.join("real"), dir.join("link")).unwrap();
    let seen = Mutex::new(Vec::new());
    let check = |p: &Path| {
        seen.lock().unwrap().push(p.to_path_buf());
        Ok(())
    };
    let target = dir.join("link/a/b/f.txt");
    write(
        &target,
        "f",
        b"x",
        FileKind::Ordinary,
        Check::Fenced(&check),
    )
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            dir.join("real/a"),
            dir.join("real/a/b"),
            dir.join("real/a/b/f.txt")
        ]
    );
    assert_eq!(fs::read_to_string(dir.join("real/a/b/f.txt")).unwrap(), "x");
}

#[test]
fn a_refused_write_creates_nothing() {
    let (_d, dir) = tmp();
    let check = |p: &Path| match p.ends_with("b") {
        true => Err(format!("[no: {}]", p.display())),
        false => Ok(()),
    };
    let err = write(
        &dir.join("a/b/c/f"),
        "f",
        b"x",
        FileKind::Ordinary,
        Check::Fenced(&check),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("[no: {}]", dir.join("a/b").display())
    );
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
    let no_file = |p: &Path| match p.ends_with("f") {
        true => Err("[no]".to_string()),
        false => Ok(()),
    };
    let err = write(
        &dir.join("a/f"),
        "f",
        b"x",
        FileKind::Ordinary,
        Check::Fenced(&no_file),
    );
    assert!(matches!(err, Err(WriteError::Refused(t)) if t == "[no]"));
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
}

#[test]
fn a_folder_swapped_for_a_link_after_the_check_cannot_send_the_write_elsewhere() {
    let (_d, dir) = tmp();
    fs::create_dir_all(dir.join("project/sub")).unwrap();
    fs::create_dir(dir.join("outside")).unwrap();
    // What a fenced background job would do between the check and the write: the folder the
    // writer opened is moved away and a link to outside put in its place.
    let swapped = Mutex::new(false);
    let check = |p: &Path| {
        let mut done = swapped.lock().unwrap();
        if !*done {
            fs::rename(dir.join("project/sub"), dir.join("project/moved")).unwrap();
            symlink(dir.join("outside"), dir.join("project/sub")).unwrap();
            *done = true;
        }
        match p.starts_with(dir.join("project")) {
            true => Ok(()),
            false => Err("outside".to_string()),
        }
    };
    let target = dir.join("project/sub/new/f.txt");
    write(
        &target,
        "f",
        b"x",
        FileKind::Ordinary,
        Check::Fenced(&check),
    )
    .unwrap();
    assert!(names(&dir.join("outside")).is_empty());
    assert_eq!(
        fs::read_to_string(dir.join("project/moved/new/f.txt")).unwrap(),
        "x"
    );
}

#[test]
fn a_staged_file_streams_and_leaves_nothing_unless_committed() {
    let (_d, dir) = tmp();
    let target = dir.join("download.bin");
    fs::write(&target, "old").unwrap();
    let mut staged = stage(&target, "d", FileKind::Ordinary, Check::Anywhere).unwrap();
    staged.write_all(b"part one, ").unwrap();
    assert_eq!(names(&dir).len(), 2, "the temporary file sits beside it");
    drop(staged);
    assert_eq!(names(&dir), ["download.bin"]);
    assert_eq!(fs::read_to_string(&target).unwrap(), "old");

    let mut staged = stage(&target, "d", FileKind::Ordinary, Check::Anywhere).unwrap();
    for chunk in [&b"part one, "[..], b"part two"] {
        staged.write_all(chunk).unwrap();
    }
    staged.commit().unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "part one, part two");
    assert_eq!(names(&dir), ["download.bin"]);
}

#[test]
fn a_long_name_still_has_room_for_its_temporary_file() {
    let (_d, dir) = tmp();
    let name = "n".repeat(250);
    ordinary(&dir.join(&name), b"x").unwrap();
    assert_eq!(names(&dir), [name]);
}

#[test]
fn append_writes_the_header_only_in_a_file_it_creates() {
    let (_d, dir) = tmp();
    let log = dir.join("state/mm/history");
    append(&log, "h", b"#V2\n", b"one\n", Check::Anywhere).unwrap();
    append(&log, "h", b"#V2\n", b"two\n", Check::Anywhere).unwrap();
    assert_eq!(fs::read_to_string(&log).unwrap(), "#V2\none\ntwo\n");
    // Through a link, to where the file lives.
    symlink(&log, dir.join("link")).unwrap();
    append(
        &dir.join("link"),
        "h",
        b"#V2\n",
        b"three\n",
        Check::Anywhere,
    )
    .unwrap();
    assert_eq!(fs::read_to_string(&log).unwrap(), "#V2\none\ntwo\nthree\n");
    let refuse = |_: &Path| Err("[no]".to_string());
    let err = append(&dir.join("new/log"), "h", b"", b"x", Check::Fenced(&refuse));
    assert!(matches!(err, Err(WriteError::Refused(_))));
    assert!(!dir.join("new").exists());
}

#[test]
fn folders_are_created_checked() {
    let (_d, dir) = tmp();
    let seen = Mutex::new(Vec::new());
    let check = |p: &Path| {
        seen.lock().unwrap().push(p.to_path_buf());
        Ok(())
    };
    create_dir_all(&dir.join("a/b"), "a/b", Check::Fenced(&check)).unwrap();
    assert!(dir.join("a/b").is_dir());
    assert_eq!(*seen.lock().unwrap(), [dir.join("a"), dir.join("a/b")]);
    // One that exists is left as it is.
    create_dir_all(&dir.join("a/b"), "a/b", Check::Anywhere).unwrap();
}

#[test]
fn the_path_of_an_open_folder_is_where_it_really_is() {
    let (_d, dir) = tmp();
    fs::create_dir(dir.join("real")).unwrap();
    symlink(dir.join("real"), dir.join("link")).unwrap();
    let fd = File::open(dir.join("link")).unwrap();
    assert_eq!(
        crate::handle_path::path_of(std::os::fd::AsFd::as_fd(&fd)).unwrap(),
        dir.join("real")
    );
}

#[test]
fn remove_takes_a_file_or_a_link_itself_never_what_it_points_to() {
    let (_d, dir) = tmp();
    fs::write(dir.join("old.json"), "x").unwrap();
    fs::write(dir.join("kept.txt"), "keep").unwrap();
    symlink(dir.join("kept.txt"), dir.join("link.json")).unwrap();
    fs::create_dir(dir.join("sub")).unwrap();
    assert!(remove(&dir.join("old.json"), "old", Check::Anywhere).unwrap());
    assert!(remove(&dir.join("link.json"), "link", Check::Anywhere).unwrap());
    assert_eq!(fs::read_to_string(dir.join("kept.txt")).unwrap(), "keep");
    assert!(!remove(&dir.join("old.json"), "old", Check::Anywhere).unwrap());
    assert!(!remove(&dir.join("none/x.json"), "x", Check::Anywhere).unwrap());
    assert_eq!(
        remove(&dir.join("sub"), "sub", Check::Anywhere)
            .unwrap_err()
            .to_string(),
        "sub is a directory, not a file"
    );
    let refuse = |_: &Path| Err("not here".to_string());
    assert_eq!(
        remove(&dir.join("kept.txt"), "kept", Check::Fenced(&refuse))
            .unwrap_err()
            .to_string(),
        "not here"
    );
    assert_eq!(names(&dir), ["kept.txt", "sub"]);
}
