//! The registry of IAs: built-in TCP entries, the static registry (`dat.conf`, from
//! `$DAT_OVERRIDE`, else `/etc/dat.conf`), and providers added at run time. A `dat.conf` line
//! overrides a built-in entry of the same name.

pub mod conf;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use parking_lot::RwLock;

pub use conf::ConfEntry;

use crate::runtime::rdma_ports::RdmaPort;

/// Which transport serves an IA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Our software transport over TCP.
    Tcp,
    /// rdma-cm + verbs (lines naming OpenFabrics' provider libraries select it).
    Rdma,
    /// A provider registered at run time by `dat_registry_add_provider`; we list it but cannot
    /// open it.
    Foreign,
}

impl Transport {
    /// What a `dat.conf` library path selects: OpenFabrics' provider libraries mean RDMA, a
    /// path naming `tcp` (or our own library) means the TCP transport.
    pub fn from_lib_path(lib_path: &str) -> Option<Transport> {
        let base = lib_path.rsplit('/').next().unwrap_or(lib_path);
        // 2.0: libdaplofa, libdaploscm, libdaplomcm; 1.2: libdaplcma, libdaplscm.
        if base.starts_with("libdaplo")
            || base.starts_with("libdaplcma")
            || base.starts_with("libdaplscm")
        {
            Some(Transport::Rdma)
        } else if base.contains("tcp") || base.starts_with("libdat") {
            Some(Transport::Tcp)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Rdma => "rdma",
            Transport::Foreign => "foreign",
        }
    }
}

/// Where an entry came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    File { path: PathBuf, line: usize },
    Runtime,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builtin => write!(f, "built-in"),
            Origin::File { path, line } => write!(f, "{}:{}", path.display(), line),
            Origin::Runtime => write!(f, "dat_registry_add_provider"),
        }
    }
}

/// One registered IA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub ia_name: String,
    pub api_major: u32,
    pub api_minor: u32,
    pub thread_safe: bool,
    pub is_default: bool,
    pub lib_path: String,
    pub provider_version: String,
    pub ia_params: String,
    pub platform_params: String,
    pub transport: Transport,
    pub origin: Origin,
}

/// The DAT API version this library implements.
pub const API_MAJOR: u32 = 2;
pub const API_MINOR: u32 = 0;
/// The earlier version it serves too, through the 1.2 entry points (`src/api12`).
pub const API_MAJOR_1: u32 = 1;
pub const API_MINOR_1: u32 = 2;
pub const PROVIDER_VERSION: &str = "libdat.0.1";

impl Entry {
    /// Whether a caller of API major version `major` may open this IA: a `dat.conf` line or
    /// a run-time provider serves the version it names (`u1.2` lines the 1.2 API, `u2.0` lines
    /// 2.0, as OpenFabrics' two registries), a built-in IA both.
    pub fn serves(&self, major: u32) -> bool {
        self.version_for(major).is_some()
    }

    /// The version (major, minor) of major version `major` this IA serves, if it serves one.
    pub fn version_for(&self, major: u32) -> Option<(u32, u32)> {
        self.versions().into_iter().find(|(m, _)| *m == major)
    }

    /// The API versions (major, minor) whose programs may open this IA, the newest first: the
    /// one its line names, or both for a built-in IA.
    pub fn versions(&self) -> Vec<(u32, u32)> {
        match self.origin {
            Origin::Builtin => vec![(API_MAJOR, API_MINOR), (API_MAJOR_1, API_MINOR_1)],
            _ => vec![(self.api_major, self.api_minor)],
        }
    }

    /// The peer timeout this entry's platform parameters set (`peer_timeout=SECONDS`, among
    /// other words separated by spaces or commas; fractions allowed), if any.
    pub fn peer_timeout(&self) -> Option<std::time::Duration> {
        setting(&self.platform_params, "peer_timeout")
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
            .map(std::time::Duration::from_secs_f64)
    }

    /// The built-in RDMA IAs of a port: `ofa-v2-<netdev>` (rdma-cm on the interface, as
    /// OpenFabrics' openib_cma line) when it carries one, and `ofa-v2-<dev>-<port>`.
    fn builtin_rdma(port: &RdmaPort) -> Vec<Entry> {
        let entry = |ia_name: String, lib_path: &str, ia_params: String| {
            Entry::built_in(ia_name, lib_path, ia_params, Transport::Rdma)
        };
        let mut out = Vec::new();
        if let Some(n) = &port.netdev {
            out.push(entry(
                format!("ofa-v2-{n}"),
                "libdaplofa.so.2",
                format!("{n} 0"),
            ));
        }
        out.push(entry(
            format!("ofa-v2-{}-{}", port.device, port.port),
            "libdaploscm.so.2",
            format!("{} {}", port.device, port.port),
        ));
        out
    }

    fn builtin(netdev: &str) -> Entry {
        Entry {
            is_default: netdev == "lo",
            ..Entry::built_in(
                format!("tcp-{netdev}"),
                "tcp",
                netdev.into(),
                Transport::Tcp,
            )
        }
    }

    /// A built-in entry (not the default) of either transport.
    fn built_in(ia_name: String, lib_path: &str, ia_params: String, transport: Transport) -> Entry {
        Entry {
            ia_name,
            api_major: API_MAJOR,
            api_minor: API_MINOR,
            thread_safe: true,
            is_default: false,
            lib_path: lib_path.into(),
            provider_version: PROVIDER_VERSION.into(),
            ia_params,
            platform_params: String::new(),
            transport,
            origin: Origin::Builtin,
        }
    }
}

/// The value of `key=value` among the words of `params` (separated by spaces or commas).
fn setting<'a>(params: &'a str, key: &str) -> Option<&'a str> {
    params
        .split(|c: char| c.is_whitespace() || c == ',')
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The path of the static registry: `$DAT_OVERRIDE`, else `/etc/dat.conf`.
pub fn conf_path() -> PathBuf {
    std::env::var_os("DAT_OVERRIDE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/dat.conf"))
}

/// Builds the entry list from built-ins (TCP on `netdevs`, RDMA on `rdma_ports`) and a
/// `dat.conf` text; warnings name file and line.
pub fn assemble(
    netdevs: &[String],
    rdma_ports: &[RdmaPort],
    conf: Option<(&std::path::Path, &str)>,
    warn: &mut dyn FnMut(String),
) -> Vec<Arc<Entry>> {
    let mut entries: Vec<Arc<Entry>> = netdevs
        .iter()
        .map(|n| Arc::new(Entry::builtin(n)))
        .collect();
    for e in rdma_ports.iter().flat_map(Entry::builtin_rdma) {
        if !entries.iter().any(|x| x.ia_name == e.ia_name) {
            entries.push(Arc::new(e));
        }
    }
    let Some((path, text)) = conf else {
        return entries;
    };
    let (lines, warnings) = conf::parse(text);
    for w in warnings {
        warn(format!(
            "libdat: {}:{}: skipped: {}",
            path.display(),
            w.line,
            w.reason
        ));
    }
    for line in lines {
        let Some(transport) = Transport::from_lib_path(&line.lib_path) else {
            warn(format!(
                "libdat: {}:{}: skipped: no transport of ours serves library `{}`",
                path.display(),
                line.line,
                line.lib_path
            ));
            continue;
        };
        let entry = Arc::new(Entry {
            origin: Origin::File {
                path: path.to_path_buf(),
                line: line.line,
            },
            transport,
            ia_name: line.ia_name,
            api_major: line.api_major,
            api_minor: line.api_minor,
            thread_safe: line.thread_safe,
            is_default: line.is_default,
            lib_path: line.lib_path,
            provider_version: line.provider_version,
            ia_params: line.ia_params,
            platform_params: line.platform_params,
        });
        // A line of the same name replaces a built-in; among file lines of one API version the
        // first one wins, as OpenFabrics' static registry keeps the first (a `u1.2` and a
        // `u2.0` line may share a name: each API finds its own).
        match entries.iter().position(|e| {
            e.ia_name == entry.ia_name
                && (e.origin == Origin::Builtin || e.api_major == entry.api_major)
        }) {
            Some(i) if entries[i].origin == Origin::Builtin => entries[i] = entry,
            Some(_) => warn(format!(
                "libdat: {}:{}: skipped: IA `{}` is already registered",
                path.display(),
                line.line,
                entry.ia_name
            )),
            None => entries.push(entry),
        }
    }
    entries
}

static REGISTRY: LazyLock<RwLock<Vec<Arc<Entry>>>> = LazyLock::new(|| {
    let path = conf_path();
    let text = std::fs::read_to_string(&path).ok();
    let conf = text.as_deref().map(|t| (path.as_path(), t));
    let entries = assemble(
        &crate::runtime::interfaces::ipv4_interfaces(),
        &crate::runtime::rdma_ports::rdma_ports(),
        conf,
        &mut |w| eprintln!("{w}"),
    );
    RwLock::new(entries)
});

/// A snapshot of every registered IA, in registry order.
pub fn entries() -> Vec<Arc<Entry>> {
    REGISTRY.read().clone()
}

/// The entry named `ia_name` that serves API major version `major`.
pub fn find(ia_name: &str, major: u32) -> Option<Arc<Entry>> {
    REGISTRY
        .read()
        .iter()
        .find(|e| e.ia_name == ia_name && e.serves(major))
        .cloned()
}

/// A snapshot of the IAs that serve API major version `major`, in registry order.
pub fn entries_serving(major: u32) -> Vec<Arc<Entry>> {
    REGISTRY
        .read()
        .iter()
        .filter(|e| e.serves(major))
        .cloned()
        .collect()
}

/// Adds a run-time provider; `false` if an IA of that name and version is registered already.
pub fn add_runtime(ia_name: &str, major: u32, minor: u32, thread_safe: bool) -> bool {
    let mut reg = REGISTRY.write();
    if reg
        .iter()
        .any(|e| e.ia_name == ia_name && e.api_major == major && e.api_minor == minor)
    {
        return false;
    }
    reg.push(Arc::new(Entry {
        ia_name: ia_name.into(),
        api_major: major,
        api_minor: minor,
        thread_safe,
        is_default: false,
        lib_path: String::new(),
        provider_version: String::new(),
        ia_params: String::new(),
        platform_params: String::new(),
        transport: Transport::Foreign,
        origin: Origin::Runtime,
    }));
    true
}

/// Removes a run-time provider; `false` if no such run-time provider is registered.
pub fn remove_runtime(ia_name: &str, major: u32, minor: u32) -> bool {
    let mut reg = REGISTRY.write();
    let before = reg.len();
    reg.retain(|e| {
        !(e.origin == Origin::Runtime
            && e.ia_name == ia_name
            && e.api_major == major
            && e.api_minor == minor)
    });
    reg.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn names(e: &[Arc<Entry>]) -> Vec<&str> {
        e.iter().map(|e| e.ia_name.as_str()).collect()
    }

    #[test]
    fn rdma_ports_give_openfabrics_names_and_a_line_of_the_same_name_wins() {
        let ports = [
            RdmaPort {
                device: "rxe0".into(),
                port: 1,
                netdev: Some("rxenet0".into()),
            },
            RdmaPort {
                device: "mlx5_0".into(),
                port: 2,
                netdev: None,
            },
        ];
        let text = "ofa-v2-rxenet0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"10.0.0.1 0\" \"\"\n";
        let e = assemble(
            &["lo".into()],
            &ports,
            Some((Path::new("/x/dat.conf"), text)),
            &mut |_| {},
        );
        assert_eq!(
            names(&e),
            [
                "tcp-lo",
                "ofa-v2-rxenet0",
                "ofa-v2-rxe0-1",
                "ofa-v2-mlx5_0-2"
            ]
        );
        assert_eq!(e[1].ia_params, "10.0.0.1 0");
        assert!(matches!(e[1].origin, Origin::File { .. }));
        assert_eq!(
            (e[2].ia_params.as_str(), e[2].transport, &e[2].origin),
            ("rxe0 1", Transport::Rdma, &Origin::Builtin)
        );
        assert_eq!(e[3].lib_path, "libdaploscm.so.2");
    }

    #[test]
    fn versions_are_those_an_entry_serves() {
        let text = "cma u1.2 nonthreadsafe default libdaplcma.so.1 mv_dapl.1.2 \"eth0 0\" \"\"\n\
                    tcp-lo u2.0 threadsafe default tcp x 127.0.0.1\n";
        let e = assemble(
            &["lo".into(), "eth0".into()],
            &[],
            Some((Path::new("/x/dat.conf"), text)),
            &mut |_| {},
        );
        let versions: Vec<_> = e
            .iter()
            .map(|e| (e.ia_name.as_str(), e.versions()))
            .collect();
        assert_eq!(
            versions,
            [
                ("tcp-lo", vec![(2, 0)]),
                ("tcp-eth0", vec![(2, 0), (1, 2)]),
                ("cma", vec![(1, 2)]),
            ]
        );
        for entry in &e {
            for major in 0..4 {
                let listed = entry.versions().iter().any(|v| v.0 == major);
                assert_eq!(
                    entry.serves(major),
                    listed,
                    "{} major {major}",
                    entry.ia_name
                );
            }
        }
    }

    #[test]
    fn builtins_exist_without_a_file() {
        let mut warnings = Vec::new();
        let e = assemble(&["lo".into(), "eth0".into()], &[], None, &mut |w| {
            warnings.push(w)
        });
        assert_eq!(names(&e), ["tcp-lo", "tcp-eth0"]);
        assert_eq!(e[0].transport, Transport::Tcp);
        assert_eq!(e[0].ia_params, "lo");
        assert!(warnings.is_empty());
    }

    #[test]
    fn file_lines_override_builtins_and_warn_with_file_and_line() {
        let text = "tcp-lo u2.0 threadsafe default tcp x 127.0.0.1\n\
                    ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n\
                    broken line\n\
                    other u2.0 threadsafe default libfoo.so v x\n";
        let mut warnings = Vec::new();
        let e = assemble(
            &["lo".into()],
            &[],
            Some((Path::new("/x/dat.conf"), text)),
            &mut |w| warnings.push(w),
        );
        assert_eq!(names(&e), ["tcp-lo", "ofa-v2-ib0"]);
        assert_eq!(e[0].ia_params, "127.0.0.1");
        assert_eq!(
            e[0].origin,
            Origin::File {
                path: "/x/dat.conf".into(),
                line: 1
            }
        );
        assert_eq!(e[1].transport, Transport::Rdma);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("/x/dat.conf:3"), "{}", warnings[0]);
        assert!(warnings[1].contains("/x/dat.conf:4"), "{}", warnings[1]);
    }

    #[test]
    fn transport_follows_the_library_path() {
        assert_eq!(
            Transport::from_lib_path("libdaploscm.so.2"),
            Some(Transport::Rdma)
        );
        assert_eq!(
            Transport::from_lib_path("/usr/lib/libdaplofa.so.2"),
            Some(Transport::Rdma)
        );
        assert_eq!(Transport::from_lib_path("tcp"), Some(Transport::Tcp));
        assert_eq!(
            Transport::from_lib_path("libdat2.so.2"),
            Some(Transport::Tcp)
        );
        assert_eq!(Transport::from_lib_path("libother.so"), None);
        // compat-dapl's DAT 1.2 providers.
        assert_eq!(
            Transport::from_lib_path("libdaplcma.so.1"),
            Some(Transport::Rdma)
        );
        assert_eq!(
            Transport::from_lib_path("libdaplscm.so.1"),
            Some(Transport::Rdma)
        );
    }

    #[test]
    fn each_api_finds_its_own_lines_and_the_builtins_serve_both() {
        let text = "ib0 u1.2 threadsafe default libdaplcma.so.1 dapl.1.2 \"ib0 0\" \"\"\n\
                    ib0 u2.0 threadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n\
                    ib0 u1.2 threadsafe default libdaplscm.so.1 dapl.1.2 \"mlx4_0 1\" \"\"\n\
                    old u1.2 threadsafe default libdat-tcp.so.1 dapl.1.2 lo \"\"\n";
        let mut warnings = Vec::new();
        let e = assemble(
            &["lo".into()],
            &[],
            Some((Path::new("/x/dat.conf"), text)),
            &mut |w| warnings.push(w),
        );
        assert_eq!(names(&e), ["tcp-lo", "ib0", "ib0", "old"]);
        // The second u1.2 line of the same name is the duplicate, not the u2.0 one.
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("/x/dat.conf:3"), "{}", warnings[0]);
        let serving = |name: &str, major| {
            e.iter()
                .filter(|x| x.ia_name == name && x.serves(major))
                .map(|x| x.lib_path.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(serving("ib0", 1), ["libdaplcma.so.1"]);
        assert_eq!(serving("ib0", 2), ["libdaplofa.so.2"]);
        assert_eq!(serving("old", 2), Vec::<&str>::new());
        assert_eq!(serving("old", 1), ["libdat-tcp.so.1"]);
        assert_eq!(serving("tcp-lo", 1), ["tcp"]);
        assert_eq!(serving("tcp-lo", 2), ["tcp"]);
        assert!(serving("tcp-lo", 3).is_empty());
    }
}
