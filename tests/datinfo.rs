//! datinfo end to end: the registry as a user sees it, with and without a dat.conf.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

fn datinfo(conf: Option<&str>, args: &[&str]) -> (String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_datinfo"));
    cmd.args(args);
    let dir = std::env::temp_dir().join(format!("datinfo-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One file per call: the tests run at once.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!("dat{}.conf", CALLS.fetch_add(1, Ordering::Relaxed)));
    match conf {
        Some(text) => {
            std::fs::write(&path, text).unwrap();
            cmd.env("DAT_OVERRIDE", &path);
        }
        None => {
            cmd.env("DAT_OVERRIDE", dir.join("absent.conf"));
        }
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "datinfo failed: {out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn without_a_dat_conf_the_builtin_entries_are_listed() {
    let (out, err) = datinfo(None, &[]);
    assert!(out.contains("absent: built-in entries only"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("tcp-lo ") && l.contains("built-in")),
        "{out}"
    );
    assert!(err.is_empty(), "{err}");
}

#[test]
fn verbose_opens_each_ia_and_prints_attributes() {
    let (out, _) = datinfo(None, &["-v"]);
    assert!(out.contains("address          127.0.0.1"), "{out}");
    assert!(out.contains("max message"), "{out}");
}

#[test]
fn dat_conf_lines_override_builtins_and_bad_lines_warn_with_file_and_line() {
    let conf = "# test\n\
                tcp-lo u2.0 threadsafe default tcp libdat.0.1 \"127.0.0.1\" \"\"\n\
                this line is broken\n\
                ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n";
    let (out, err) = datinfo(Some(conf), &[]);
    assert!(
        err.contains("dat1.conf:3") || err.contains(".conf:3"),
        "{err}"
    );
    let lo = out
        .lines()
        .find(|l| l.trim_start().starts_with("tcp-lo "))
        .unwrap();
    assert!(lo.contains(".conf:2"), "{lo}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("ofa-v2-ib0 ") && l.contains("rdma")),
        "{out}"
    );
}

#[test]
fn each_ia_shows_the_dat_versions_whose_programs_may_open_it() {
    let conf = "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"lo 0\" \"\"\n\
                ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n";
    let (out, err) = datinfo(Some(conf), &[]);
    assert!(err.is_empty(), "{err}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name}: {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    let cma = line("OpenIB-cma");
    assert_eq!(&cma[..3], ["OpenIB-cma", "rdma", "u1.2"], "{out}");
    assert!(cma.last().unwrap().ends_with(".conf:1"), "{out}");
    assert_eq!(
        &line("ofa-v2-ib0")[..3],
        ["ofa-v2-ib0", "rdma", "u2.0"],
        "{out}"
    );
    // The built-in IAs serve both versions.
    assert_eq!(
        &line("tcp-lo")[..3],
        ["tcp-lo", "tcp", "u2.0,u1.2"],
        "{out}"
    );
    // Counted apart: every IA but the 1.2 line for 2.0, every one but the 2.0 line for 1.2.
    let total = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(" from "))
        .count();
    let counts = format!(
        "{total} IA(s): {} open to DAT 2.0 programs, {} to DAT 1.2 programs",
        total - 1,
        total - 1
    );
    assert!(out.contains(&counts), "{counts}: {out}");
}

#[test]
fn verbose_leaves_an_ia_of_dat_1_2_alone_and_says_why() {
    let conf = "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"lo 0\" \"\"\n";
    let (out, _) = datinfo(Some(conf), &["-v"]);
    let mut lines = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("OpenIB-cma "));
    assert!(lines.next().is_some(), "{out}");
    assert_eq!(
        lines.next().map(str::trim),
        Some("not opened here: DAT 1.2 programs alone open it"),
        "{out}"
    );
    // The built-in ones are opened.
    assert!(out.contains("address          127.0.0.1"), "{out}");
}
