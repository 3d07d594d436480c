//! How the process's memory is mapped, asked of the kernel before memory is registered: the
//! TCP transport copies peers' bytes into registered memory in user space, so a region must
//! name only memory the process may read (and write, where its privileges let anyone write),
//! as pinning the pages for a verbs registration requires.
//!
//! The kernel is asked one mapping at a time with the `PROCMAP_QUERY` ioctl on
//! `/proc/self/maps` (Linux 6.11 on), kept open: a few microseconds for a region of one
//! mapping. Older kernels have the file read whole instead. Where `/proc` is not mounted,
//! `mincore(2)` still finds unmapped pages, and protections go unchecked.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::sys;

/// What every mapping of a range allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub read: bool,
    pub write: bool,
}

/// Part of a range is not mapped: the first unmapped address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unmapped {
    pub at: u64,
}

/// How `[address, address + length)` is mapped: the access all of it allows, or where the
/// mappings stop covering it. `length` is not 0.
pub fn access(address: u64, length: u64) -> Result<Access, Unmapped> {
    let end = address.saturating_add(length);
    if QUERY_WORKS.load(Ordering::Relaxed) {
        let mut kept = KEPT.lock();
        if let Some(maps) = kept.file() {
            match query_each(maps, address, end) {
                Some(answer) => return answer,
                None => QUERY_WORKS.store(false, Ordering::Relaxed),
            }
        }
    }
    let mut text = String::new();
    match File::open("/proc/self/maps").and_then(|mut maps| maps.read_to_string(&mut text)) {
        Ok(_) => from_maps_text(&text, address, end),
        Err(_) => pages_present(address, end),
    }
}

/// Whether `PROCMAP_QUERY` answered so far (false once a kernel refuses it as unknown).
static QUERY_WORKS: AtomicBool = AtomicBool::new(true);

/// `/proc/self/maps`, kept open for the queries (opening it costs ten times a query).
static KEPT: Mutex<Kept> = Mutex::new(Kept { maps: None });

struct Kept {
    /// The file, the process that opened it, and what it is (device and inode).
    maps: Option<(File, u32, (u64, u64))>,
}

impl Kept {
    /// The file, reopened where the one kept is no longer this process's own: after a
    /// `fork` (it describes the parent), or where the program closed our descriptor and the
    /// number now names another file (never asked then). None: `/proc` is not there.
    fn file(&mut self) -> Option<&File> {
        let pid = sys::current_pid();
        let fresh = self
            .maps
            .as_ref()
            .is_some_and(|(f, p, id)| *p == pid && identity(f) == Some(*id));
        if !fresh {
            if let Some((f, _, id)) = self.maps.take() {
                if identity(&f) == Some(id) {
                    drop(f); // a forked child's copy: ours to close
                } else {
                    std::mem::forget(f); // the number is another file's now: not ours to close
                }
            }
            let f = File::open("/proc/self/maps").ok()?;
            let id = identity(&f)?;
            self.maps = Some((f, pid, id));
        }
        self.maps.as_ref().map(|(f, _, _)| f)
    }
}

/// A file's device and inode.
fn identity(f: &File) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    f.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// `struct procmap_query` of `<linux/fs.h>` (Linux 6.11).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// `_IOWR('f', 17, struct procmap_query)`.
const PROCMAP_QUERY: u64 =
    (3 << 30) | ((std::mem::size_of::<ProcmapQuery>() as u64) << 16) | ((b'f' as u64) << 8) | 17;
const VMA_READABLE: u64 = 0x01;
const VMA_WRITABLE: u64 = 0x02;

/// Walks the mappings covering the range, one `PROCMAP_QUERY` each; None: the kernel does not
/// know the query.
fn query_each(maps: &File, address: u64, end: u64) -> Option<Result<Access, Unmapped>> {
    let mut access = Access {
        read: true,
        write: true,
    };
    let mut at = address;
    while at < end {
        // No flags: the mapping that covers `query_addr`, or ENOENT.
        let mut q = ProcmapQuery {
            size: std::mem::size_of::<ProcmapQuery>() as u64,
            query_addr: at,
            ..Default::default()
        };
        // SAFETY: the ioctl reads and writes `q`, a `struct procmap_query` whose `size` says
        // so, and writes through no pointer (its name and build id sizes are 0).
        let rc = unsafe {
            libc::ioctl(
                maps.as_raw_fd(),
                PROCMAP_QUERY as _,
                &mut q as *mut ProcmapQuery,
            )
        };
        if rc != 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOENT) => Some(Err(Unmapped { at })),
                _ => None,
            };
        }
        if q.vma_start > at || q.vma_end <= at {
            return None; // not the answer asked for: read the file instead
        }
        access.read &= q.vma_flags & VMA_READABLE != 0;
        access.write &= q.vma_flags & VMA_WRITABLE != 0;
        at = q.vma_end;
    }
    Some(Ok(access))
}

/// The same walk over the text of `/proc/self/maps` (its lines in address order:
/// `start-end perms offset dev inode [path]`).
fn from_maps_text(text: &str, address: u64, end: u64) -> Result<Access, Unmapped> {
    let mut access = Access {
        read: true,
        write: true,
    };
    let mut at = address;
    for line in text.lines() {
        let Some((start, stop, perms)) = parse_line(line) else {
            continue;
        };
        if stop <= at {
            continue;
        }
        if start > at {
            break;
        }
        access.read &= perms.as_bytes().first() == Some(&b'r');
        access.write &= perms.as_bytes().get(1) == Some(&b'w');
        at = stop;
        if at >= end {
            return Ok(access);
        }
    }
    Err(Unmapped { at })
}

fn parse_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut fields = line.split_ascii_whitespace();
    let (start, stop) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    Some((
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(stop, 16).ok()?,
        perms,
    ))
}

/// Without `/proc`: `mincore` fails with ENOMEM where a page is unmapped (protections
/// unknown: taken as allowing everything).
fn pages_present(address: u64, end: u64) -> Result<Access, Unmapped> {
    let page = page_size();
    let first = address & !(page - 1);
    let mut vector = [0u8; 64];
    let mut at = first;
    while at < end {
        let pages = ((end - at).div_ceil(page)).min(vector.len() as u64);
        // SAFETY: `vector` holds a byte for each of the `pages` pages asked about.
        let rc = unsafe {
            libc::mincore(
                at as *mut libc::c_void,
                (pages * page) as usize,
                vector.as_mut_ptr(),
            )
        };
        if rc != 0 {
            // Somewhere in these pages: find the first unmapped one.
            for p in 0..pages {
                let one = at + p * page;
                // SAFETY: one byte of `vector` for one page.
                if unsafe {
                    libc::mincore(one as *mut libc::c_void, page as usize, vector.as_mut_ptr())
                } != 0
                {
                    return Err(Unmapped {
                        at: one.max(address),
                    });
                }
            }
        }
        at += pages * page;
    }
    Ok(Access {
        read: true,
        write: true,
    })
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pages` pages mapped with `prot`, unmapped when dropped.
    struct Mapping {
        base: *mut u8,
        len: usize,
    }

    impl Mapping {
        fn new(pages: usize, prot: i32) -> Mapping {
            let len = pages * page_size() as usize;
            // SAFETY: a fresh anonymous mapping; no existing memory is touched.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED);
            Mapping {
                base: base as *mut u8,
                len,
            }
        }
        fn at(&self, page: usize) -> u64 {
            self.base as u64 + (page as u64) * page_size()
        }
        fn protect(&self, page: usize, pages: usize, prot: i32) {
            assert_eq!(
                // SAFETY: pages of our own mapping.
                unsafe {
                    libc::mprotect(
                        self.at(page) as *mut libc::c_void,
                        pages * page_size() as usize,
                        prot,
                    )
                },
                0
            );
        }
        fn unmap(&self, page: usize, pages: usize) {
            assert_eq!(
                // SAFETY: pages of our own mapping, which nothing else uses.
                unsafe {
                    libc::munmap(
                        self.at(page) as *mut libc::c_void,
                        pages * page_size() as usize,
                    )
                },
                0
            );
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: our mapping (munmap of a range partly unmapped already is fine).
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        }
    }

    const RW: i32 = libc::PROT_READ | libc::PROT_WRITE;

    /// Every way of asking gives the same answers: the ioctl (where the kernel has it), the
    /// file's text, and (for what it can tell) mincore.
    fn each_way(address: u64, length: u64) -> Vec<Result<Access, Unmapped>> {
        let end = address + length;
        let mut text = String::new();
        File::open("/proc/self/maps")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let mut answers = vec![access(address, length), from_maps_text(&text, address, end)];
        if let Some(a) = query_each(&File::open("/proc/self/maps").unwrap(), address, end) {
            answers.push(a);
        }
        answers
    }

    #[test]
    fn a_writable_mapping_allows_everything_inside_it() {
        let m = Mapping::new(4, RW);
        for a in each_way(m.at(1) + 10, 2 * page_size()) {
            assert_eq!(
                a,
                Ok(Access {
                    read: true,
                    write: true
                })
            );
        }
        assert_eq!(
            pages_present(m.at(0), m.at(4)),
            Ok(Access {
                read: true,
                write: true
            })
        );
    }

    #[test]
    fn a_read_only_page_inside_the_range_takes_write_away() {
        let m = Mapping::new(4, RW);
        m.protect(2, 1, libc::PROT_READ);
        for a in each_way(m.at(0), 4 * page_size()) {
            assert_eq!(
                a,
                Ok(Access {
                    read: true,
                    write: false
                })
            );
        }
        // The pages before it are still writable.
        assert_eq!(
            access(m.at(0), 2 * page_size()),
            Ok(Access {
                read: true,
                write: true
            })
        );
        m.protect(3, 1, libc::PROT_NONE);
        assert_eq!(
            access(m.at(3), 1),
            Ok(Access {
                read: false,
                write: false
            })
        );
    }

    #[test]
    fn a_hole_is_found_where_it_starts() {
        let m = Mapping::new(4, RW);
        m.unmap(2, 2);
        let hole = m.at(2);
        for a in each_way(m.at(1), 2 * page_size()) {
            assert_eq!(a, Err(Unmapped { at: hole }));
        }
        for a in each_way(hole + 5, 10) {
            assert_eq!(a, Err(Unmapped { at: hole + 5 }));
        }
        assert_eq!(pages_present(m.at(1), m.at(3)), Err(Unmapped { at: hole }));
        assert_eq!(
            pages_present(hole + 5, hole + 15),
            Err(Unmapped { at: hole + 5 })
        );
    }

    #[test]
    fn maps_lines_parse() {
        let text = "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n00401000-00403000 rw-p 00000000 00:00 0\n";
        assert_eq!(
            from_maps_text(text, 0x400800, 0x402000),
            Ok(Access {
                read: true,
                write: false
            })
        );
        assert_eq!(
            from_maps_text(text, 0x401000, 0x403000),
            Ok(Access {
                read: true,
                write: true
            })
        );
        assert_eq!(
            from_maps_text(text, 0x402000, 0x404000),
            Err(Unmapped { at: 0x403000 })
        );
        assert_eq!(
            from_maps_text(text, 0x3ff000, 0x400010),
            Err(Unmapped { at: 0x3ff000 })
        );
    }
}
