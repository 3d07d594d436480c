//! Compiles the C shim for the variadic `dat_extension_op` into the library.
fn main() {
    println!("cargo:rerun-if-changed=src/ext/shim.c");
    cc::Build::new().file("src/ext/shim.c").warnings(true).extra_warnings(true).compile("datshim");
}
