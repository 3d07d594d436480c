//! The `dat.conf` static registry format (OpenFabrics): one entry per line, eight fields
//! separated by blanks (the eighth, platform params, may be left out), fields optionally in
//! double quotes with backslash escapes, `#` starting a comment outside quotes.
//!
//! ```text
//! <ia_name> <api_version> <threadsafety> <default> <lib_path> \
//!           <provider_version> <ia_params> [<platform_params>]
//! ```

use std::fmt;

/// One well-formed line of a `dat.conf`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfEntry {
    pub ia_name: String,
    /// `u2.0` is user API 2.0.
    pub api_major: u32,
    pub api_minor: u32,
    pub thread_safe: bool,
    pub is_default: bool,
    pub lib_path: String,
    pub provider_version: String,
    pub ia_params: String,
    pub platform_params: String,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfWarning {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for ConfWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// The longest IA name `DAT_PROVIDER_INFO` can carry (with its NUL).
pub const MAX_IA_NAME: usize = 255;

/// Parses a whole file: good lines become entries, each bad line a warning.
pub fn parse(text: &str) -> (Vec<ConfEntry>, Vec<ConfWarning>) {
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        match parse_line(line) {
            Ok(None) => {}
            Ok(Some(fields)) => match entry_from_fields(fields, line_no) {
                Ok(e) => entries.push(e),
                Err(reason) => warnings.push(ConfWarning {
                    line: line_no,
                    reason,
                }),
            },
            Err(reason) => warnings.push(ConfWarning {
                line: line_no,
                reason,
            }),
        }
    }
    (entries, warnings)
}

/// Splits a line into fields; `None` for a blank or comment-only line.
fn parse_line(line: &str) -> Result<Option<Vec<String>>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.peek() {
            None | Some('#') => break,
            Some('"') => {
                chars.next();
                let mut field = String::new();
                loop {
                    match chars.next() {
                        None => return Err("unterminated quoted field".into()),
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            None => return Err("backslash at end of line".into()),
                            Some(c) => field.push(unescape(c)),
                        },
                        Some(c) => field.push(c),
                    }
                }
                if chars
                    .peek()
                    .is_some_and(|c| !c.is_whitespace() && *c != '#')
                {
                    return Err("text directly after a closing quote".into());
                }
                fields.push(field);
            }
            Some(_) => {
                let mut field = String::new();
                while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '#') {
                    if c == '"' {
                        return Err("quote inside an unquoted field".into());
                    }
                    if c == '\\' {
                        match chars.next() {
                            None => return Err("backslash at end of line".into()),
                            Some(e) => field.push(unescape(e)),
                        }
                    } else {
                        field.push(c);
                    }
                }
                fields.push(field);
            }
        }
    }
    Ok((!fields.is_empty()).then_some(fields))
}

fn unescape(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        other => other,
    }
}

fn entry_from_fields(fields: Vec<String>, line: usize) -> Result<ConfEntry, String> {
    if fields.len() < 7 || fields.len() > 8 {
        return Err(format!("expected 7 or 8 fields, found {}", fields.len()));
    }
    let mut f = fields.into_iter();
    let mut next = || f.next().unwrap_or_default();
    let ia_name = next();
    if ia_name.is_empty() || ia_name.len() > MAX_IA_NAME {
        return Err(format!("IA name must have 1 to {MAX_IA_NAME} bytes"));
    }
    let version = next();
    let (api_major, api_minor) = parse_api_version(&version)
        .ok_or_else(|| format!("API version `{version}` is not of the form u<major>.<minor>"))?;
    let thread_safe = match next().as_str() {
        "threadsafe" => true,
        "nonthreadsafe" => false,
        other => return Err(format!("`{other}` is neither threadsafe nor nonthreadsafe")),
    };
    let is_default = match next().as_str() {
        "default" => true,
        "nondefault" => false,
        other => return Err(format!("`{other}` is neither default nor nondefault")),
    };
    Ok(ConfEntry {
        ia_name,
        api_major,
        api_minor,
        thread_safe,
        is_default,
        lib_path: next(),
        provider_version: next(),
        ia_params: next(),
        platform_params: next(),
        line,
    })
}

/// `u2.0` -> (2, 0). Kernel entries (`k2.0`) are not for a user library.
fn parse_api_version(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.strip_prefix('u')?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_openfabrics_line() {
        let (e, w) = parse(
            "ofa-v2-mlx4_0-1 u2.0 nonthreadsafe default libdaploscm.so.2 dapl.2.0 \"mlx4_0 1\" \"\"\n",
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(e.len(), 1);
        let e = &e[0];
        assert_eq!(e.ia_name, "ofa-v2-mlx4_0-1");
        assert_eq!((e.api_major, e.api_minor), (2, 0));
        assert!(!e.thread_safe);
        assert!(e.is_default);
        assert_eq!(e.lib_path, "libdaploscm.so.2");
        assert_eq!(e.provider_version, "dapl.2.0");
        assert_eq!(e.ia_params, "mlx4_0 1");
        assert_eq!(e.platform_params, "");
        assert_eq!(e.line, 1);
    }

    #[test]
    fn seven_fields_comments_and_blank_lines() {
        let text =
            "# header\n\n   \ntcp-x u2.0 threadsafe nondefault tcp libdat.2.0 lo # trailing\n";
        let (e, w) = parse(text);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].ia_params, "lo");
        assert_eq!(e[0].platform_params, "");
        assert!(e[0].thread_safe && !e[0].is_default);
        assert_eq!(e[0].line, 4);
    }

    #[test]
    fn quoted_fields_keep_escapes_and_hashes() {
        let (e, w) =
            parse(r#"a u2.0 threadsafe default tcp v "say \"hi\" # not a comment" "x\\y""#);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(e[0].ia_params, "say \"hi\" # not a comment");
        assert_eq!(e[0].platform_params, "x\\y");
    }

    #[test]
    fn malformed_lines_warn_with_their_number_and_good_lines_survive() {
        let text = "good u2.0 threadsafe default tcp v lo\n\
                    short u2.0 threadsafe\n\
                    badver 2.0 threadsafe default tcp v lo\n\
                    badts u2.0 maybe default tcp v lo\n\
                    baddef u2.0 threadsafe often tcp v lo\n\
                    open u2.0 threadsafe default tcp v \"lo\n\
                    many u2.0 threadsafe default tcp v lo p extra\n\
                    good2 u1.2 nonthreadsafe nondefault tcp v eth0 \"\"\n";
        let (e, w) = parse(text);
        let names: Vec<_> = e.iter().map(|e| e.ia_name.as_str()).collect();
        assert_eq!(names, ["good", "good2"]);
        let lines: Vec<_> = w.iter().map(|w| w.line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7]);
        assert_eq!((e[1].api_major, e[1].api_minor), (1, 2));
    }

    #[test]
    fn overlong_name_is_refused() {
        let name = "n".repeat(MAX_IA_NAME + 1);
        let (e, w) = parse(&format!("{name} u2.0 threadsafe default tcp v lo"));
        assert!(e.is_empty());
        assert_eq!(w.len(), 1);
    }
}
