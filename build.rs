//! Compiles the library's C: the shim for the variadic `dat_extension_op`, and the waits that
//! are cancellation points (`dat_evd_wait`, `dat_cno_wait`).
fn main() {
    let sources = ["src/ext/shim.c", "src/ext/wait.c"];
    for s in sources {
        println!("cargo:rerun-if-changed={s}");
    }
    cc::Build::new()
        .files(sources)
        .warnings(true)
        .extra_warnings(true)
        .compile("datshim");
}
