//! Writes include/dat2 (the OpenFabrics file names) from the Rust ABI types and the exported
//! functions, with cbindgen; cbindgen.toml holds the shared settings and, under `[headergen]`,
//! what cbindgen cannot derive (function-like macros, pointer and string macros) per file.
//! With `--set 1.2` it writes include/dat (the DAT 1.2 file names) from src/abi12 and the 1.2
//! prototypes declared there (src/abi12/prototypes.rs), with cbindgen-1.2.toml; after the
//! prototypes, `.symver` lines bind every call to the library's DAT 1.2 entry points
//! (`symbol_versions`), and the text is made C89-clean (`c89`), as compat-dapl's headers are.
//!
//! Every struct, union and enum carries the tag OpenFabrics gives it (`typedef struct dat_event
//! {...} DAT_EVENT;`), so C can spell `struct dat_event` and C++ mangles a `DAT_EVENT *`
//! parameter as `P9dat_event`. cbindgen names either the tag or the typedef, not both, so the
//! tags are added here, by one rule that matches the DAT headers: an enum's tag is its Rust
//! name (`dat_boolean` behind `DAT_BOOLEAN`), a struct's or union's is its Rust name in lower
//! case (`DAT_EVENT` -> `dat_event`). tests/abi/compare.py checks every tag against them.
//!
//! usage: headergen [--set 1.2] OUTPUT_DIR   (run from the repository root)

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// One generated header: the Rust modules whose items it declares, and what it includes.
struct Header {
    file: &'static str,
    guard: &'static str,
    modules: &'static [&'static str],
    includes: &'static [&'static str],
    functions: Functions,
}

enum Functions {
    None,
    /// Every exported function not placed elsewhere.
    Rest,
    Only(&'static [&'static str]),
    /// Those src/abi12/prototypes.rs declares under a line `// <one of these files>`.
    Declared(&'static [&'static str]),
}

/// One header set: its directory's name, the Rust ABI types' directory, the settings, the
/// headers.
struct Set {
    dir: &'static str,
    abi: &'static str,
    config: &'static str,
    headers: &'static [Header],
    /// The version node every function of the set is bound to by `.symver` (see
    /// `symbol_versions`); `None`: the default version, as a plain link binds it.
    symbol_version: Option<&'static str>,
    /// Whether the headers are written for C89 too (see `c89`).
    c89: bool,
}

const DAT2: Set = Set {
    dir: "dat2",
    abi: "src/abi",
    config: "cbindgen.toml",
    headers: HEADERS,
    symbol_version: None,
    c89: false,
};

/// DAT 1.2: compat-dapl's ten file names (no IB extension), each header including what it
/// uses (compat-dapl's rely on udat.h's order). Which functions each declares is said by
/// src/abi12/prototypes.rs.
const DAT12: Set = Set {
    dir: "dat",
    abi: "src/abi12",
    config: "cbindgen-1.2.toml",
    headers: HEADERS_12,
    symbol_version: Some("DAT_1.2"),
    // The 1.2 generation's programs are often C89, and compat-dapl's headers compile there.
    c89: true,
};

const PROTOTYPES_12: &str = "src/abi12/prototypes.rs";

const REGISTRY_FUNCTIONS: &[&str] = &[
    "dat_registry_add_provider",
    "dat_registry_remove_provider",
    "dat_registry_providers_related",
];

const IB_EXTENSION_FUNCTIONS: &[&str] = &["dat_strerror_extension", "dat_strerror_ext_status"];

const HEADERS: &[Header] = &[
    Header {
        file: "udat_config.h",
        guard: "_UDAT_CONFIG_H_",
        modules: &["config"],
        includes: &[],
        functions: Functions::None,
    },
    Header {
        file: "dat_platform_specific.h",
        guard: "_DAT_PLATFORM_SPECIFIC_H_",
        modules: &["platform"],
        includes: &[],
        functions: Functions::None,
    },
    Header {
        file: "dat_error.h",
        guard: "_DAT_ERROR_H_",
        modules: &["dat_error"],
        includes: &["dat2/dat_platform_specific.h"],
        functions: Functions::None,
    },
    Header {
        file: "dat_vendor_specific.h",
        guard: "_DAT_VENDOR_SPECIFIC_H_",
        modules: &[],
        includes: &[],
        functions: Functions::None,
    },
    Header {
        file: "udat_vendor_specific.h",
        guard: "_UDAT_VENDOR_SPECIFIC_H_",
        modules: &[],
        includes: &["dat2/dat_vendor_specific.h"],
        functions: Functions::None,
    },
    Header {
        file: "dat.h",
        guard: "_DAT_H_",
        modules: &["dat"],
        includes: &[
            "dat2/udat_config.h",
            "dat2/dat_platform_specific.h",
            "dat2/dat_error.h",
        ],
        functions: Functions::None,
    },
    Header {
        file: "udat.h",
        guard: "_UDAT_H_",
        modules: &["udat"],
        includes: &[
            "dat2/udat_config.h",
            "dat2/dat_platform_specific.h",
            "dat2/dat.h",
            "dat2/udat_vendor_specific.h",
        ],
        functions: Functions::Rest,
    },
    Header {
        file: "dat_redirection.h",
        guard: "_DAT_REDIRECTION_H_",
        modules: &["redirection"],
        includes: &["dat2/udat.h"],
        functions: Functions::None,
    },
    Header {
        file: "udat_redirection.h",
        guard: "_UDAT_REDIRECTION_H_",
        modules: &[],
        includes: &["dat2/dat_redirection.h"],
        functions: Functions::None,
    },
    Header {
        file: "dat_registry.h",
        guard: "_DAT_REGISTRY_H_",
        modules: &["registry"],
        includes: &["dat2/udat.h", "dat2/udat_redirection.h"],
        functions: Functions::Only(REGISTRY_FUNCTIONS),
    },
    Header {
        file: "dat_ib_extensions.h",
        guard: "_DAT_IB_EXTENSIONS_H_",
        modules: &["ib_extensions"],
        includes: &["dat2/udat.h"],
        functions: Functions::Only(IB_EXTENSION_FUNCTIONS),
    },
];

const HEADERS_12: &[Header] = &[
    Header {
        file: "udat_config.h",
        guard: "_UDAT_CONFIG_H_",
        modules: &["config"],
        includes: &[],
        functions: Functions::None,
    },
    Header {
        file: "dat_platform_specific.h",
        guard: "_DAT_PLATFORM_SPECIFIC_H_",
        modules: &["platform"],
        includes: &[],
        functions: Functions::None,
    },
    Header {
        file: "dat_error.h",
        guard: "_DAT_ERROR_H_",
        modules: &["dat_error"],
        includes: &["dat/dat_platform_specific.h"],
        functions: Functions::None,
    },
    Header {
        file: "dat_vendor_specific.h",
        guard: "_DAT_VENDOR_SPECIFIC_H_",
        modules: &[],
        includes: &[],
        functions: Functions::None,
    },
    Header {
        file: "udat_vendor_specific.h",
        guard: "_UDAT_VENDOR_SPECIFIC_H_",
        modules: &[],
        includes: &["dat/dat_vendor_specific.h"],
        functions: Functions::None,
    },
    Header {
        file: "dat.h",
        guard: "_DAT_H_",
        modules: &["dat"],
        includes: &[
            "dat/udat_config.h",
            "dat/dat_platform_specific.h",
            "dat/dat_error.h",
        ],
        // Its functions' types are udat.h's, defined after udat.h includes dat.h: declared there.
        functions: Functions::None,
    },
    Header {
        file: "udat.h",
        guard: "_UDAT_H_",
        modules: &["udat"],
        includes: &[
            "dat/udat_config.h",
            "dat/dat_platform_specific.h",
            "dat/dat.h",
            "dat/udat_vendor_specific.h",
        ],
        functions: Functions::Declared(&["dat.h", "udat.h"]),
    },
    Header {
        file: "dat_redirection.h",
        guard: "_DAT_REDIRECTION_H_",
        modules: &["redirection"],
        includes: &["dat/udat.h"],
        functions: Functions::None,
    },
    Header {
        file: "udat_redirection.h",
        guard: "_UDAT_REDIRECTION_H_",
        modules: &[],
        includes: &["dat/dat_redirection.h"],
        functions: Functions::None,
    },
    Header {
        file: "dat_registry.h",
        guard: "_DAT_REGISTRY_H_",
        modules: &["registry"],
        includes: &["dat/udat.h", "dat/udat_redirection.h"],
        functions: Functions::Declared(&["dat_registry.h"]),
    },
];

/// The functions src/abi12/prototypes.rs declares, by the header named on the `// file.h` line
/// before their block.
fn declared_functions(text: &str) -> BTreeMap<String, String> {
    let mut header = String::new();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(file) = line.strip_prefix("// ").filter(|f| f.ends_with(".h")) {
            header = file.to_string();
        } else if let Some(rest) = line.strip_prefix("pub fn ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name, header.clone());
        }
    }
    out
}

/// The items a Rust ABI module declares, and its C enums (tag -> raw typedef name).
#[derive(Default)]
struct ModuleItems {
    names: Vec<String>,
    enums: Vec<(String, String)>,
    /// The unsigned integer constants (name -> `u32` or `u64`): see `typed_integer_macros`.
    unsigned: Vec<(String, String)>,
}

fn scan_module(text: &str) -> ModuleItems {
    let mut items = ModuleItems::default();
    let mut last_raw: Option<String> = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["pub", "type", name, "=", ty] if *ty == "u32;" || *ty == "i32;" => {
                last_raw = Some(name.to_string());
                items.names.push(name.to_string());
            }
            ["pub", "enum", tag, ..] => match last_raw.take() {
                Some(raw) => items.enums.push((tag.to_string(), raw)),
                None => items.names.push(tag.to_string()),
            },
            ["pub", kind, name, ..] if ["struct", "union", "type", "const"].contains(kind) => {
                let name = name.trim_end_matches([':', ';', '{', '<']).to_string();
                if let ["pub", "const", _, ty @ ("u32" | "u64"), "=", ..] = words.as_slice() {
                    items.unsigned.push((name.clone(), ty.to_string()));
                }
                items.names.push(name);
                last_raw = None;
            }
            [first, ..] if first.starts_with("#[") || first.starts_with("//") => {}
            [] => {}
            _ => {
                if !line.starts_with(' ') && !line.starts_with('}') {
                    last_raw = None;
                }
            }
        }
    }
    items
}

/// The provider-dispatch macros (`DAT_EP_CREATE(...)` and the like): one per function pointer
/// of `DAT_PROVIDER`, calling it through the provider of the first argument. Derived from the
/// Rust `DAT_PROVIDER` so they follow it. `ia_open` and `ia_close` are called by the registry,
/// not through a handle, and have none; DAT 2.0 spells `DAT_IA_HA_RELATED` as an object-like
/// macro (dat.h, verbatim).
fn dispatch_macros(redirection_rs: &str) -> String {
    let mut arity = BTreeMap::new();
    for line in redirection_rs.lines() {
        if let Some(rest) = line.strip_prefix("pub type ") {
            if let Some((name, ty)) = rest.split_once(" = Option<unsafe extern \"C\" fn(") {
                let params = ty.split(')').next().unwrap_or("");
                let count = if params.trim().is_empty() {
                    0
                } else {
                    params.split(',').count()
                };
                arity.insert(name.to_string(), count);
            }
        }
    }
    let mut out = String::from("\n/* Dispatch through the provider of a handle (for providers; consumers call dat_*). */\n");
    let mut in_provider = false;
    for line in redirection_rs.lines() {
        if line.starts_with("pub struct DAT_PROVIDER ") {
            in_provider = true;
            continue;
        }
        if in_provider && line.starts_with('}') {
            break;
        }
        let Some(field) = line.trim().strip_prefix("pub ") else {
            continue;
        };
        let Some((name, ty)) = field.trim_end_matches(',').split_once(": ") else {
            continue;
        };
        let Some(base) = name.strip_suffix("_func") else {
            continue;
        };
        if !in_provider || ["ia_open", "ia_close", "ia_ha_related"].contains(&base) {
            continue;
        }
        let Some(&n) = arity.get(ty) else { continue };
        if n == 0 {
            continue;
        }
        let args: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
        let list = args.join(", ");
        let call = args
            .iter()
            .map(|a| format!("({a})"))
            .collect::<Vec<_>>()
            .join(", ");
        out += &format!(
            "#define DAT_{}({list}) (*DAT_HANDLE_TO_PROVIDER(a0)->{name})({call})\n",
            base.to_uppercase()
        );
    }
    out
}

/// The functions src/api defines for C, or declares (those the library defines in C, in
/// src/ext), whose names begin with `prefix`: `dat_` for the API, `libdat_` for the
/// functions between the library's Rust and its C, which no header declares.
fn defined_functions(root: &Path, prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root.join("src/api")).expect("src/api") {
        let text = fs::read_to_string(entry.expect("entry").path()).expect("read");
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line
                .strip_prefix("pub unsafe extern \"C\" fn ")
                .or_else(|| line.strip_prefix("pub fn "))
            {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.starts_with(prefix) {
                    names.push(name);
                }
            }
        }
    }
    names.sort();
    names
}

/// The module roots: cbindgen follows their `mod` declarations to the other files (naming
/// those too would declare every function twice).
fn rust_sources(root: &Path) -> Vec<std::path::PathBuf> {
    ["src/abi/mod.rs", "src/api/mod.rs"]
        .iter()
        .map(|p| root.join(p))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (set, out) = match args.as_slice() {
        [out] => (&DAT2, out),
        [flag, version, out] if flag == "--set" && version == "1.2" => (&DAT12, out),
        _ => panic!("usage: headergen [--set 1.2] OUTPUT_DIR"),
    };
    let out = Path::new(out);
    let root = Path::new(".");
    let toml_text = fs::read_to_string(root.join(set.config)).expect(set.config);
    let mut table: toml::Table = toml_text.parse().expect("cbindgen.toml is TOML");
    let verbatim: BTreeMap<String, toml::Value> = match table.remove("headergen") {
        Some(toml::Value::Table(t)) => t.into_iter().collect(),
        _ => BTreeMap::new(),
    };
    let base: cbindgen::Config = table.try_into().expect("cbindgen settings");

    let mut modules: BTreeMap<String, ModuleItems> = BTreeMap::new();
    for h in set.headers {
        for m in h.modules {
            let text =
                fs::read_to_string(root.join(format!("{}/{m}.rs", set.abi))).expect("abi module");
            modules.insert(m.to_string(), scan_module(&text));
        }
    }
    let (functions, internal, sources, declared) = if set.dir == DAT2.dir {
        (
            defined_functions(root, "dat_"),
            defined_functions(root, "libdat_"),
            rust_sources(root),
            BTreeMap::new(),
        )
    } else {
        // cbindgen skips the `#[cfg(test)] mod prototypes` of src/abi12: named here instead.
        let text = fs::read_to_string(root.join(PROTOTYPES_12)).expect(PROTOTYPES_12);
        let declared = declared_functions(&text);
        (
            declared.keys().cloned().collect(),
            Vec::new(),
            vec![
                root.join(format!("{}/mod.rs", set.abi)),
                root.join(PROTOTYPES_12),
            ],
            declared,
        )
    };
    let unsigned: BTreeMap<String, String> = modules
        .values()
        .flat_map(|m| m.unsigned.iter().cloned())
        .collect();
    let enum_tags: BTreeMap<String, String> = modules
        .values()
        .flat_map(|m| m.enums.iter().map(|(tag, raw)| (raw.clone(), tag.clone())))
        .collect();
    fs::create_dir_all(out).expect("output dir");

    for h in set.headers {
        let mut cfg = base.clone();
        cfg.include_guard = Some(h.guard.to_string());
        cfg.includes = h.includes.iter().map(|s| s.to_string()).collect();
        let text_of = |key: &str| {
            verbatim
                .get(h.file)
                .and_then(|t| t.get(key))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        cfg.after_includes = text_of("after_includes");
        // The trailer goes inside the include guard (cbindgen's would follow it, and a header
        // included twice would define its trailer's types twice): see `inside_guard`.
        let mut trailer = text_of("trailer").unwrap_or_default();
        if h.file == "dat_redirection.h" {
            let redirection = fs::read_to_string(root.join(format!("{}/redirection.rs", set.abi)))
                .expect("redirection.rs");
            trailer += &dispatch_macros(&redirection);
        }
        if let Some(sys) = verbatim
            .get(h.file)
            .and_then(|t| t.get("sys_includes"))
            .and_then(|v| v.as_array())
        {
            cfg.sys_includes = sys
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
        }
        let mut include = Vec::new();
        let mut exclude = Vec::new();
        // Items a header's verbatim text declares instead of cbindgen.
        let replaced: Vec<String> = verbatim
            .values()
            .filter_map(|t| t.get("replaces").and_then(|v| v.as_array()))
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        for (name, items) in &modules {
            let mine = h.modules.contains(&name.as_str());
            for n in &items.names {
                if mine {
                    include.push(n.clone())
                } else {
                    exclude.push(n.clone())
                }
            }
            for (tag, raw) in &items.enums {
                // The raw integer alias is how Rust sees a C enum; C sees the enum itself.
                exclude.push(raw.clone());
                cfg.export.rename.insert(tag.clone(), raw.clone());
                if mine {
                    include.push(tag.clone())
                } else {
                    exclude.push(tag.clone())
                }
            }
        }
        let mut placed = Vec::new();
        for f in &functions {
            let here = match h.functions {
                Functions::None => false,
                Functions::Only(list) => list.contains(&f.as_str()),
                Functions::Rest => ![REGISTRY_FUNCTIONS, IB_EXTENSION_FUNCTIONS]
                    .concat()
                    .contains(&f.as_str()),
                Functions::Declared(files) => declared
                    .get(f)
                    .is_some_and(|file| files.contains(&file.as_str())),
            };
            if here {
                placed.push(f.as_str());
            } else {
                exclude.push(f.clone());
            }
        }
        if let Some(version) = set.symbol_version {
            trailer += &symbol_versions(&placed, version);
        }
        // Spelled by C itself (see [export.rename] in cbindgen.toml).
        exclude.extend(["sockaddr", "sockaddr_in6", "ibv_ah", "DAT_VA_LIST"].map(String::from));
        // The library's own C calls these, with these types (src/ext).
        exclude.extend(internal.iter().cloned());
        exclude.extend(["ExtArgs", "WaitState"].map(String::from));
        include.retain(|n| !replaced.contains(n));
        exclude.extend(replaced.iter().cloned());
        cfg.export.include = include;
        cfg.export.exclude = exclude;
        let mut builder = cbindgen::Builder::new().with_config(cfg);
        for s in &sources {
            builder = builder.with_src(s);
        }
        let bindings = builder
            .generate()
            .unwrap_or_else(|e| panic!("{}: {e}", h.file));
        let mut text = Vec::new();
        bindings.write(&mut text);
        let text = String::from_utf8(text).expect("cbindgen writes UTF-8");
        let list_of = |key: &str| -> Vec<String> {
            verbatim
                .get(h.file)
                .and_then(|t| t.get(key))
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut text = typed_integer_macros(&with_tags(&text, &enum_tags), &unsigned);
        for name in list_of("inline_types") {
            text = inline_type(&text, &name);
        }
        for member in list_of("const_members") {
            text = const_member(&text, &member);
        }
        for tag in list_of("beyond_int_enums") {
            text = beyond_int_enum(&text, &tag);
        }
        let text = inside_guard(&text, h.guard, &trailer);
        let text = if set.c89 { c89(&text) } else { text };
        fs::write(out.join(h.file), text).expect("write header");
    }
}

/// Writes the definition of the helper type `name` (a `typedef struct|union {...} name;` of
/// ours) where its one use is, as an unnamed member type, and drops the typedef.
fn inline_type(text: &str, name: &str) -> String {
    let close = format!("\n}} {name};\n");
    let end = text
        .find(&close)
        .unwrap_or_else(|| panic!("inline_types: no typedef {name}"));
    let start = text[..end]
        .rfind("\ntypedef ")
        .unwrap_or_else(|| panic!("inline_types: no start of {name}"))
        + 1;
    let definition = &text[start..end + close.len()];
    let (head, body) = definition
        .split_once(" {\n")
        .unwrap_or_else(|| panic!("inline_types: {name} is no struct or union"));
    let kind = head.trim_start_matches("typedef ");
    let members = body.trim_end_matches(&close[1..]);
    let rest = format!(
        "{}{}",
        &text[..start],
        text[end + close.len()..].trim_start_matches('\n')
    );
    let uses: Vec<_> = rest.match_indices(&format!("  {name} ")).collect();
    assert_eq!(
        uses.len(),
        1,
        "inline_types: {name} is used {} times",
        uses.len()
    );
    let indented: String = members.lines().map(|l| format!("  {l}\n")).collect();
    rest.replacen(
        &format!("  {name} "),
        &format!("  {kind} {{\n{indented}  }} "),
        1,
    )
}

/// Gives each unsigned integer macro the reference's type: cbindgen writes a bare decimal, an
/// `int` (a `long` past `INT_MAX`), where the reference writes `UINT64_C(...)` for the 64-bit
/// masks and an `unsigned int` for the 32-bit ones (`0x80000000`, `(DAT_HA_LB)0`). The type is
/// the ABI too: an `int` variable holding 0x80000000 equals the reference's `DAT_CLASS_ERROR`
/// and not a `long` 2147483648; a mask passed to `printf("%" PRIx64)` or shifted by 32 must be
/// 64 bits wide; C++ picks an overload by it.
fn typed_integer_macros(text: &str, unsigned: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len() + 4096);
    for line in text.split_inclusive('\n') {
        let words: Vec<&str> = line.split_whitespace().collect();
        let typed = match words.as_slice() {
            ["#define", name, value] if value.bytes().all(|b| b.is_ascii_digit()) => {
                match unsigned.get(*name).map(String::as_str) {
                    Some("u64") => Some(format!("#define {name} UINT64_C({value})\n")),
                    Some("u32") => Some(format!("#define {name} {value}U\n")),
                    _ => None,
                }
            }
            _ => None,
        };
        out.push_str(typed.as_deref().unwrap_or(line));
    }
    out
}

/// Lets the enum `tag` have an enumerator beyond the range of an `int` (DAT 1.2's
/// `DAT_NOT_IMPLEMENTED`, 0xFFFF0000: C then makes the enum unsigned) in a `-pedantic` C build,
/// which warns of it: the value is the ABI.
fn beyond_int_enum(text: &str, tag: &str) -> String {
    let open = format!("typedef enum {tag} {{\n");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("beyond_int_enums: no enum {tag}"));
    let close = text[start..].find("\n} ").expect("enum end") + start;
    let end = text[close..].find(";\n").expect("typedef end") + close + 2;
    format!(
        "{}#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Wpedantic\"\n{}#pragma GCC diagnostic pop\n{}",
        &text[..start],
        &text[start..end],
        &text[end..]
    )
}

/// Declares the struct member `member` const.
fn const_member(text: &str, member: &str) -> String {
    let mut found = 0;
    let out: Vec<String> = text
        .lines()
        .map(|line| {
            let decl = line.trim_start();
            let declares = line.starts_with("  ")
                && decl.ends_with(';')
                && decl
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == member);
            if declares {
                found += 1;
                format!("  const {decl}")
            } else {
                line.to_string()
            }
        })
        .collect();
    assert_eq!(found, 1, "const_members: {member} declared {found} times");
    out.join("\n") + "\n"
}

/// Binds a program's references to `functions` to their definitions in version node `version`
/// (`dat_x@DAT_1.2`): one library (`-ldat`) defines each DAT function twice, the default
/// `dat_x@@DAT_2.0` that a plain reference binds to, and the 1.2 one. A binary built so
/// imports `dat_x@DAT_1.2`, as one built against compat-dapl's headers and `libdat.so.1`
/// does. Only GCC-compatible compilers emitting ELF know `.symver`; `__asm__`, not `asm`,
/// is accepted by every C and C++ standard under `-pedantic`. An unreferenced function
/// adds no import: the directive names a symbol, it does not reference it.
fn symbol_versions(functions: &[&str], version: &str) -> String {
    if functions.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n/* Calls bind to the DAT {} entry points of the library (version {version}). */\n",
        version.trim_start_matches("DAT_")
    );
    out += "#if defined(__GNUC__) && defined(__ELF__)\n";
    for f in functions {
        out += &format!("__asm__(\".symver {f}, {f}@{version}\");\n");
    }
    out += "#endif\n";
    out
}

/// What C89 (`-std=c89 -pedantic`) warns of in cbindgen's output, rewritten: the comma after
/// an enum's last enumerator, and a `//` comment after a C preprocessor `#endif`.
fn c89(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        let closes_next = lines
            .get(i + 1)
            .is_some_and(|next| next.trim_start().starts_with('}'));
        let line = match line.strip_suffix(',') {
            Some(last) if closes_next && !line.trim_start().starts_with('#') => last.to_string(),
            _ => match line.split_once("// ") {
                Some((directive, comment)) if directive.starts_with("#endif") => {
                    format!("{directive}/* {comment} */")
                }
                _ => line.to_string(),
            },
        };
        out += &line;
        out.push('\n');
    }
    out
}

/// Places `trailer` just before the include guard's `#endif`.
fn inside_guard(text: &str, guard: &str, trailer: &str) -> String {
    let end = format!("#endif  /* {guard} */");
    let at = text.rfind(&end).unwrap_or_else(|| panic!("no `{end}`"));
    format!("{}{trailer}\n{}", &text[..at], &text[at..])
}

/// Names the tag of every `typedef struct|union|enum { ... } NAME;` cbindgen wrote anonymous.
/// `enum_tags` maps an enum's C typedef name to its tag; structs and unions take their
/// typedef name in lower case. Our own helper types (`libdat_*`, the anonymous members
/// OpenFabrics declares inline) stay anonymous: they add no tag to a program's namespace.
fn with_tags(text: &str, enum_tags: &BTreeMap<String, String>) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len() + 4096);
    for (i, line) in lines.iter().enumerate() {
        let kind = ["struct", "union", "enum"]
            .into_iter()
            .find(|k| *line == format!("typedef {k} {{"));
        let Some(kind) = kind else {
            out += line;
            out.push('\n');
            continue;
        };
        // The typedef's name closes the definition: the next line at column 0 that starts `} `.
        let name = lines[i + 1..]
            .iter()
            .find_map(|l| l.strip_prefix("} ").and_then(|rest| rest.strip_suffix(';')))
            .unwrap_or_else(|| panic!("no typedef name after line {}: {line}", i + 1));
        if name.starts_with("libdat_") {
            out += line;
            out.push('\n');
            continue;
        }
        let tag = match kind {
            "enum" => enum_tags
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("enum {name}: no Rust enum names its tag")),
            _ => name.to_lowercase(),
        };
        out += &format!("typedef {kind} {tag} {{\n");
    }
    out
}
