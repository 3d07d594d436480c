//! datinfo end to end: the registry as a user sees it, with and without a dat.conf.

use std::process::Command;

fn datinfo(conf: Option<&str>, args: &[&str]) -> (String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_datinfo"));
    cmd.args(args);
    let dir = std::env::temp_dir().join(format!("datinfo-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("dat{}.conf", args.len()));
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
