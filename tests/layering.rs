//! The crate's folders depend on each other one way, read from the source files themselves:
//! every path a file names (`use crate::...`, `crate::...`, `super::...`, and relative ones
//! such as `tcp::EpWire`), with comments and string literals left out.
//!
//! - (a) `src/runtime` (machinery with no DAT knowledge) names no other folder of the crate;
//! - (b) the objects (the seam among them, `src/objects/seam`: the traits a provider implements),
//!   the API and the providers' folder's own module (`src/transport/mod.rs`) name no provider
//!   (`transport::tcp`, `transport::verbs`, `tcp::`, `verbs::`);
//! - (c) neither provider names the other;
//! - (d) no provider names the registry;
//!
//! and no folder (top module: `objects`, `registry`, `error`...) imports a folder that imports
//! it back, however far round (`no_folder_imports_a_folder_that_imports_it_back`).
//!
//! Where the code still breaks a rule, `KNOWN` lists the breach with its reason. The test fails
//! on a breach it does not list, and on a listed one that no longer occurs, so the list only
//! shrinks and stays true.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rule {
    A,
    B,
    C,
    D,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::A => "(a) src/runtime names no other folder of the crate",
            Rule::B => "(b) the objects, the seam among them, and the API name no provider",
            Rule::C => "(c) no provider names the other",
            Rule::D => "(d) no provider names the registry",
        })
    }
}

/// A breach the code still has: the file (from the crate's root), the rule, the path as this
/// test renders it, and why it is still there.
struct Known {
    file: &'static str,
    rule: Rule,
    path: &'static str,
    why: &'static str,
}

const KNOWN: &[Known] = &[];

/// One path a file names: where, and its segments (`crate` first when it is absolute, after
/// `super` and `self` were resolved against the module the path is in).
#[derive(Debug, PartialEq)]
struct Named {
    line: usize,
    segments: Vec<String>,
}

impl Named {
    fn rendered(&self) -> String {
        self.segments.join("::")
    }

    fn has(&self, segment: &str) -> bool {
        self.segments.iter().any(|s| s == segment)
    }
}

/// The text with comments, string and character literals blanked (newlines kept, so offsets
/// keep their lines).
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, chars: &[char]| {
        out.extend(chars.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }))
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let after_ident = i > 0 && is_ident(b[i - 1]);
        let skip = match rest {
            ['/', '/', ..] => rest.iter().position(|&c| c == '\n').unwrap_or(rest.len()),
            ['/', '*', ..] => block_comment_len(rest),
            ['r', '"' | '#', ..] if !after_ident => raw_string_len(&rest[1..]).map_or(0, |n| n + 1),
            ['b', 'r', '"' | '#', ..] if !after_ident => {
                raw_string_len(&rest[2..]).map_or(0, |n| n + 2)
            }
            ['"', ..] => string_len(rest),
            // A character literal ('x', '\n', '\u{7f}'); otherwise a lifetime, kept.
            ['\'', '\\', ..] => rest[3..]
                .iter()
                .position(|&c| c == '\'')
                .map_or(0, |p| p + 4),
            ['\'', _, '\'', ..] => 3,
            _ => 0,
        };
        if skip == 0 {
            out.push(b[i]);
            i += 1;
        } else {
            blank(&mut out, &rest[..skip]);
            i += skip;
        }
    }
    out
}

/// The length of the (nested) block comment `b` starts with.
fn block_comment_len(b: &[char]) -> usize {
    let (mut depth, mut i) = (0, 0);
    while i < b.len() {
        match &b[i..] {
            ['/', '*', ..] => (depth, i) = (depth + 1, i + 2),
            ['*', '/', ..] => {
                (depth, i) = (depth - 1, i + 2);
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// The length of the string literal `b` starts with (at its `"`).
fn string_len(b: &[char]) -> usize {
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The length of a raw string's hashes and quoted body (`#"..."#`, `"..."`) `b` starts with.
fn raw_string_len(b: &[char]) -> Option<usize> {
    let hashes = b.iter().take_while(|&&c| c == '#').count();
    if b.get(hashes) != Some(&'"') {
        return None;
    }
    let closing: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    (hashes + 1..b.len())
        .find(|&j| b[j..].starts_with(&closing))
        .map(|j| j + closing.len())
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A reader of paths over code with its comments and literals blanked.
struct Reader<'a> {
    b: &'a [char],
    i: usize,
    line: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_whitespace() {
            if self.b[self.i] == '\n' {
                self.line += 1;
            }
            self.i += 1;
        }
    }

    fn at_colons(&mut self) -> bool {
        let save = (self.i, self.line);
        self.skip_space();
        if self.b.get(self.i) == Some(&':') && self.b.get(self.i + 1) == Some(&':') {
            self.i += 2;
            true
        } else {
            (self.i, self.line) = save;
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_space();
        let start = self.i;
        if !self.b.get(self.i).is_some_and(|&c| is_ident_start(c)) {
            return None;
        }
        while self.b.get(self.i).is_some_and(|&c| is_ident(c)) {
            self.i += 1;
        }
        Some(self.b[start..self.i].iter().collect())
    }

    /// The rest of a path after `prefix` and `::`: a segment, more of them, or a group
    /// (`{a, b::c}`, nested) whose members each extend `prefix`.
    fn tree(&mut self, prefix: Vec<String>, out: &mut Vec<(usize, Vec<String>)>) {
        self.skip_space();
        match self.b.get(self.i) {
            Some('{') => {
                self.i += 1;
                loop {
                    self.skip_space();
                    match self.b.get(self.i) {
                        Some('}') => {
                            self.i += 1;
                            return;
                        }
                        Some(',') => self.i += 1,
                        Some('*') => {
                            self.i += 1;
                            out.push((self.line, prefix.clone()));
                        }
                        Some(&c) if is_ident_start(c) => {
                            let line = self.line;
                            let first = self.ident().unwrap();
                            if first == "as" {
                                // `a::b as c`: `c` names nothing new.
                                self.ident();
                                continue;
                            }
                            let mut path = prefix.clone();
                            if first != "self" {
                                path.push(first);
                            }
                            if self.at_colons() {
                                self.tree(path, out);
                            } else {
                                out.push((line, path));
                            }
                        }
                        _ => return,
                    }
                }
            }
            Some('*') => {
                self.i += 1;
                out.push((self.line, prefix));
            }
            _ => {
                let line = self.line;
                match self.ident() {
                    Some(segment) => {
                        let mut path = prefix;
                        path.push(segment);
                        if self.at_colons() {
                            self.tree(path, out);
                        } else {
                            out.push((line, path));
                        }
                    }
                    // `Vec::<u8>`, `<T as Trait>::`: the path so far.
                    None => out.push((line, prefix)),
                }
            }
        }
    }
}

/// The module a file is, from its path under `src` (`src/transport/tcp/mod.rs`:
/// `crate::transport::tcp`).
fn module_of(relative: &Path) -> Vec<String> {
    let mut m = vec!["crate".to_string()];
    let parts: Vec<_> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for (k, p) in parts.iter().enumerate().skip(1) {
        let last = k == parts.len() - 1;
        let stem = p.strip_suffix(".rs").unwrap_or(p);
        if !(last && (stem == "mod" || stem == "lib" || stem == "main")) {
            m.push(stem.to_string());
        }
    }
    m
}

/// Every path `text` (the file of module `module`) names, `super` and `self` resolved.
fn paths_named(text: &str, module: &[String]) -> Vec<Named> {
    let code: Vec<char> = code_only(text).chars().collect();
    let mut r = Reader {
        b: &code,
        i: 0,
        line: 1,
    };
    // Inline modules (`mod tests { ... }`): their names and the brace depth they opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut found = Vec::new();
    while r.i < code.len() {
        let c = code[r.i];
        if c == '\n' {
            r.line += 1;
            r.i += 1;
        } else if c == '{' {
            depth += 1;
            r.i += 1;
        } else if c == '}' {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            r.i += 1;
        } else if is_ident_start(c) && !(r.i > 0 && is_ident(code[r.i - 1])) {
            // A path's later segments were read with its first (or follow a `<...>`); a method
            // (`.release::<Ep>()`) is no path.
            let mut before = code[..r.i].iter().rev().filter(|c| !c.is_whitespace());
            let last = before.next();
            let continues_a_path =
                last == Some(&'.') || (last == Some(&':') && before.next() == Some(&':'));
            let line = r.line;
            let first = r.ident().unwrap();
            if first == "mod" {
                let save = (r.i, r.line);
                if let Some(name) = r.ident() {
                    r.skip_space();
                    if code.get(r.i) == Some(&'{') {
                        inline.push((name, depth));
                        continue;
                    }
                }
                (r.i, r.line) = save;
                continue;
            }
            if continues_a_path || !r.at_colons() {
                continue;
            }
            let here: Vec<String> = module
                .iter()
                .cloned()
                .chain(inline.iter().map(|(n, _)| n.clone()))
                .collect();
            let prefix = match first.as_str() {
                "crate" => vec!["crate".to_string()],
                "self" => here,
                "super" => {
                    let mut m = here;
                    m.pop();
                    loop {
                        let save = (r.i, r.line);
                        if r.ident().as_deref() == Some("super") && r.at_colons() {
                            m.pop();
                        } else {
                            (r.i, r.line) = save;
                            break;
                        }
                    }
                    m
                }
                _ => vec![first],
            };
            let mut trees = Vec::new();
            r.tree(prefix, &mut trees);
            found.extend(trees.into_iter().map(|(l, segments)| Named {
                line: l.max(line),
                segments,
            }));
        } else {
            r.i += 1;
        }
    }
    found
}

/// The breaches of the rules by the paths a file (relative to the crate's root) names.
fn breaches(file: &str, named: &[Named]) -> Vec<(usize, Rule, String)> {
    let under = |dir: &str| file.starts_with(dir);
    let mut out = Vec::new();
    for n in named {
        let absolute = n.segments.first().is_some_and(|s| s == "crate");
        let mut breach = |rule| out.push((n.line, rule, n.rendered()));
        if under("src/runtime/") && absolute && n.segments.get(1).is_some_and(|s| s != "runtime") {
            breach(Rule::A);
        }
        let objects_side =
            under("src/objects/") || under("src/api/") || file == "src/transport/mod.rs";
        if objects_side && (n.has("tcp") || n.has("verbs")) {
            breach(Rule::B);
        }
        if (under("src/transport/tcp/") && n.has("verbs"))
            || (under("src/transport/verbs/") && n.has("tcp"))
        {
            breach(Rule::C);
        }
        if (under("src/transport/tcp/") || under("src/transport/verbs/")) && n.has("registry") {
            breach(Rule::D);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_folders_depend_on_each_other_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "too few source files found: {}",
        files.len()
    );
    let mut new = Vec::new();
    let mut seen = vec![false; KNOWN.len()];
    for path in &files {
        let relative = path.strip_prefix(root).unwrap();
        let file = relative.to_string_lossy();
        let text = std::fs::read_to_string(path).unwrap();
        let named = paths_named(&text, &module_of(relative));
        for (line, rule, rendered) in breaches(&file, &named) {
            match KNOWN
                .iter()
                .position(|k| k.file == file && k.rule == rule && k.path == rendered)
            {
                Some(k) => seen[k] = true,
                None => new.push(format!(
                    "{file}:{line}: breaks rule {rule}: names `{rendered}`"
                )),
            }
        }
    }
    let gone: Vec<_> = KNOWN
        .iter()
        .zip(&seen)
        .filter(|(_, seen)| !**seen)
        .map(|(k, _)| {
            format!(
                "{}: `{}` (rule {}) no longer occurs: remove it from KNOWN in tests/layering.rs",
                k.file, k.path, k.rule
            )
        })
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "\n{}\n",
        new.into_iter().chain(gone).collect::<Vec<_>>().join("\n")
    );
    for k in KNOWN {
        assert!(!k.why.is_empty(), "{}: `{}` has no reason", k.file, k.path);
    }
}

/// The folder (top module of the crate) a file of `src/` belongs to: `src/objects/ep.rs` is in
/// `objects`, `src/error.rs` in `error`; None for the crate's root and the binaries.
fn folder_of(relative: &Path) -> Option<String> {
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let top = parts.get(1)?;
    let top = top.strip_suffix(".rs").unwrap_or(top);
    (top != "lib" && top != "bin").then(|| top.to_string())
}

#[test]
fn no_folder_imports_a_folder_that_imports_it_back() {
    use std::collections::BTreeMap;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let folders: Vec<String> = files
        .iter()
        .filter_map(|p| folder_of(p.strip_prefix(root).unwrap()))
        .collect();
    // Each folder's imports of another, with the first place that names it.
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for path in &files {
        let relative = path.strip_prefix(root).unwrap();
        let Some(from) = folder_of(relative) else {
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for n in paths_named(&text, &module_of(relative)) {
            let (Some(first), Some(to)) = (n.segments.first(), n.segments.get(1)) else {
                continue;
            };
            if first == "crate" && *to != from && folders.contains(to) {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_insert_with(|| format!("{}:{}", relative.display(), n.line));
            }
        }
    }
    assert!(
        edges
            .get("transport")
            .is_some_and(|e| e.contains_key("objects")),
        "the graph must see the providers import the objects"
    );
    // A depth-first walk: reaching a folder still on the path closes a circle.
    fn walk(
        at: &str,
        edges: &BTreeMap<String, BTreeMap<String, String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|f| f == at) {
            let mut circle = path[start..].to_vec();
            circle.push(at.to_string());
            return Some(circle);
        }
        if done.iter().any(|f| f == at) {
            return None;
        }
        path.push(at.to_string());
        for next in edges.get(at).into_iter().flat_map(|e| e.keys()) {
            if let Some(circle) = walk(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.push(at.to_string());
        None
    }
    let mut done = Vec::new();
    for from in edges.keys() {
        if let Some(circle) = walk(from, &edges, &mut Vec::new(), &mut done) {
            let steps: Vec<String> = circle
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], edges[&w[0]][&w[1]]))
                .collect();
            panic!("an import circle between folders:\n{}", steps.join("\n"));
        }
    }
}

#[test]
fn paths_are_read_as_the_compiler_reads_them() {
    let module = module_of(Path::new("src/transport/tcp/link.rs"));
    assert_eq!(module, ["crate", "transport", "tcp", "link"]);
    assert_eq!(
        module_of(Path::new("src/runtime/mod.rs")),
        ["crate", "runtime"]
    );
    let text = r#"
use crate::{objects::{ep::Ep, evd}, runtime::sys as s};
// use crate::registry::Entry;
/* crate::registry:: */ let s = "crate::registry::Entry";
let c = '"'; fn f<'a>(x: &'a str) {}
use super::super::verbs::conn;
mod tests {
    use super::*;
    fn g() { self::h(); Vec::<u8>::new(); }
}
let t = tcp::EpWire::default();
"#;
    let named: Vec<(usize, String)> = paths_named(text, &module)
        .iter()
        .map(|n| (n.line, n.rendered()))
        .collect();
    let expect = [
        (2, "crate::objects::ep::Ep"),
        (2, "crate::objects::evd"),
        (2, "crate::runtime::sys"),
        (6, "crate::transport::verbs::conn"),
        (8, "crate::transport::tcp::link"),
        (9, "crate::transport::tcp::link::tests::h"),
        (9, "Vec"),
        (11, "tcp::EpWire::default"),
    ];
    let expect: Vec<(usize, String)> = expect.iter().map(|(l, p)| (*l, p.to_string())).collect();
    assert_eq!(named, expect);
    let found = breaches("src/transport/tcp/link.rs", &paths_named(text, &module));
    assert_eq!(
        found,
        [(6, Rule::C, "crate::transport::verbs::conn".to_string())]
    );
    let found = breaches(
        "src/runtime/engine.rs",
        &paths_named(text, &module_of(Path::new("src/runtime/engine.rs"))),
    );
    assert_eq!(found.iter().filter(|b| b.1 == Rule::A).count(), 3);

    let grouped = "use crate::transport::{self, tcp::Tcp as T, Link};\nuse crate::registry;\n";
    let named = paths_named(grouped, &module_of(Path::new("src/objects/ep.rs")));
    let tcp = "crate::transport::tcp::Tcp".to_string();
    assert_eq!(
        breaches("src/objects/ep.rs", &named),
        [(1, Rule::B, tcp.clone())]
    );
    assert_eq!(
        breaches("src/transport/verbs/conn.rs", &named),
        [
            (1, Rule::C, tcp),
            (2, Rule::D, "crate::registry".to_string())
        ]
    );
    assert_eq!(
        breaches("src/transport/tcp/conn.rs", &named),
        [(2, Rule::D, "crate::registry".to_string())]
    );
}
