//! The configuration file as the Rust host reads it (`Pruner::configuration`,
//! used by the CLI, the hooks and the proxy): only a regular file, and never
//! more than a bounded prefix of it, so that a FIFO, a device or a huge file
//! can never make a hook hang or fill memory (a tester's `TOOLPRUNE_CONFIG`
//! of 400 MB took each hook 2.3 s and 809 MB; `/dev/zero` grew without end;
//! a FIFO hung every hook). Every such file turns pruning off with one line.

use std::path::PathBuf;
use std::process::Command;

use toolprune::Pruner;

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("config-file-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn configuration(path: &std::path::Path) -> Result<String, String> {
    let pruner = Pruner::shared().unwrap();
    let path = path.display().to_string();
    pruner
        .configuration(&|name| (name == "TOOLPRUNE_CONFIG").then(|| path.clone()))
        .map(|config| format!("threshold {}", config.threshold))
}

#[test]
fn a_fifo_a_device_or_a_directory_is_refused_at_once_never_read() {
    let dir = scratch("special");
    let fifo = dir.join("fifo.toml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for path in [fifo, PathBuf::from("/dev/zero"), dir.clone()] {
        let started = std::time::Instant::now();
        let err = configuration(&path).unwrap_err();
        assert!(err.contains("not a regular file") && err.contains(&path.display().to_string()), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{path:?} was waited on");
    }
}

#[test]
fn a_huge_file_is_refused_by_its_size_without_being_read_whole() {
    let dir = scratch("huge");
    let path = dir.join("config.toml");
    // 40 MiB: past the host's read cap (1 MiB + 1 byte) and the guest's rule (1 MiB).
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(40 << 20).unwrap();
    let err = configuration(&path).unwrap_err();
    assert!(err.ends_with("larger than the 1048576 bytes a configuration file may have"), "{err}");
    std::fs::write(&path, "threshold = 0.3\n").unwrap();
    assert_eq!(configuration(&path), Ok("threshold 0.3".to_string()));
    // At the bound: read and resolved; one byte more: refused, as the Node and Python hosts do.
    const MIB: usize = 1 << 20;
    let head = "threshold = 0.3\n#";
    std::fs::write(&path, format!("{head}{}\n", "x".repeat(MIB - head.len() - 1))).unwrap();
    assert_eq!(configuration(&path), Ok("threshold 0.3".to_string()));
    std::fs::write(&path, format!("{head}{}\n", "x".repeat(MIB - head.len()))).unwrap();
    assert!(configuration(&path).unwrap_err().ends_with("larger than the 1048576 bytes a configuration file may have"));
    // Cut inside a character at the read cap: still the size refusal, never "not UTF-8".
    std::fs::write(&path, format!("#{}\n", "é".repeat(MIB))).unwrap();
    let err = configuration(&path).unwrap_err();
    assert!(err.ends_with("larger than the 1048576 bytes a configuration file may have"), "{err}");
    assert!(configuration(&dir.join("absent.toml")).is_err_and(|e| e.contains("no such file")), "a named file that is missing");
}
