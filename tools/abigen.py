#!/usr/bin/env python3
"""Bootstraps src/abi/*.rs from a reference DAT 2.0 header set (OpenFabrics' /usr/include/dat2),
or src/abi12/*.rs from a DAT 1.2 one (`--set 1.2`: compat-dapl's dat/include, which holds dat/*.h).

The Rust types in src/abi are the source of truth of our headers (cbindgen makes include/dat2
from them); this tool wrote their first version mechanically, from clang's AST of the
reference headers, so no member, enumerator or value was typed by hand. Run it again only to
re-check: `python3 tools/abigen.py /usr/include OUTDIR` and diff OUTDIR against src/abi (or
`python3 tools/abigen.py --set 1.2 COMPAT_DAPL/dat/include OUTDIR` against src/abi12).

Conventions of the output (the rest of the crate relies on them):
- every C typedef keeps its C name;
- a C enum typedef `typedef enum tag {...} NAME;` becomes `pub type NAME = u32;` (the raw
  value C hands us) plus `pub enum tag` (num_enum conversions) listing the enumerators;
- object-like integer macros become `pub const`s of their C width and signedness.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

# Per set: the directory its headers are in (under the include directory), the headers that
# include all the others, and the version the generated modules name.
SETS = {
    "2.0": ("dat2", ["udat.h", "dat_registry.h", "dat_ib_extensions.h"], "DAT 2.0"),
    "1.2": ("dat", ["udat.h", "dat_registry.h"], "DAT 1.2"),
}
# Where each item goes: the header file it comes from.
FILE_TO_MODULE = {
    "dat_platform_specific.h": "platform",
    "dat_error.h": "dat_error",
    "dat.h": "dat",
    "udat.h": "udat",
    "dat_registry.h": "registry",
    "dat_redirection.h": "redirection",
    "udat_redirection.h": "redirection",
    "dat_vendor_specific.h": "vendor",
    "udat_vendor_specific.h": "vendor",
    "udat_config.h": "config",
    "dat_ib_extensions.h": "ib_extensions",
}
BUILTIN = {
    "char": "c_char", "signed char": "c_schar", "unsigned char": "c_uchar",
    "short": "c_short", "unsigned short": "c_ushort",
    "int": "c_int", "unsigned int": "c_uint",
    "long": "c_long", "unsigned long": "c_ulong",
    "long long": "c_longlong", "unsigned long long": "c_ulonglong",
    "void": "c_void", "float": "f32", "double": "f64",
    "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
    "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64",
    "u_int8_t": "u8", "u_int16_t": "u16", "u_int32_t": "u32", "u_int64_t": "u64",
    "size_t": "usize", "struct __va_list_tag *": "DAT_VA_LIST", "__va_list_tag *": "DAT_VA_LIST",
    "struct sockaddr": "libc::sockaddr", "struct sockaddr_in6": "libc::sockaddr_in6",
    "struct sockaddr_in": "libc::sockaddr_in",
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    args = sys.argv[1:]
    which = "2.0"
    if args[:1] == ["--set"]:
        which, args = args[1], args[2:]
    subdir, headers, version = SETS[which]
    ref, out = args[0], args[1]
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    probe = os.path.join(tmp, "probe.c")
    with open(probe, "w") as f:
        f.write("#include <netinet/in.h>\n" + "".join(f"#include <{subdir}/{h}>\n" for h in headers))
    ast = json.loads(run(["clang", "-I", ref, "-Xclang", "-ast-dump=json", "-fsyntax-only", probe]))
    items = []
    cur = None
    for d in ast["inner"]:
        loc = d.get("loc", {})
        f = loc.get("file") or loc.get("spellingLoc", {}).get("file") or loc.get("expansionLoc", {}).get("file")
        if f:
            cur = f
        if cur and f"/{subdir}/" in cur:
            d["_module"] = FILE_TO_MODULE[os.path.basename(cur)]
            d["_file"] = cur
            items.append(d)
    gen = Gen(items)
    if which == "1.2":
        # No exported function of the library has a DAT 1.2 prototype yet: the headers'
        # prototypes are declared in Rust, each under a comment naming its header.
        gen.prototypes()
    # va_list parameters: C spells them va_list (from <stdarg.h>); Rust passes the pointer.
    gen.out("platform", "pub type DAT_VA_LIST = *mut c_void;\n")
    gen.macros(ref, tmp, probe, subdir)
    for module, lines in gen.modules.items():
        with open(os.path.join(out, module + ".rs"), "w") as f:
            f.write(f"//! Types and constants of the {version} headers ({module}).\n")
            f.write("#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]\n\n")
            f.write("#[allow(unused_imports)]\nuse super::*;\n#[allow(unused_imports)]\nuse core::ffi::*;\n\n")
            f.write("\n".join(lines) + "\n")
    print("modules:", sorted(gen.modules))


class Gen:
    def __init__(self, items):
        self.items = items
        self.modules = {}
        self.tag_typedef = {}   # "struct dat_x" -> typedef name
        self.enum_tags = {}     # "enum dat_x" -> raw typedef name
        self.emitted = set()
        self.emitted_enum_variants = {}
        self.enum_module = {}
        self.anon_count = 0
        # First pass: typedef names of tags.
        for d in items:
            if d["kind"] == "TypedefDecl":
                t = d["type"]
                q = t.get("desugaredQualType", t["qualType"])
                if q in BUILTIN:
                    continue
                if re.fullmatch(r"(struct|union) \w+", q) and q not in self.tag_typedef and t["qualType"] == q:
                    self.tag_typedef[q] = d["name"]
                if re.fullmatch(r"(struct|union) \w+", t["qualType"]) and t["qualType"] not in self.tag_typedef:
                    self.tag_typedef[t["qualType"]] = d["name"]
                if q.startswith("enum ") and t["qualType"] == q:
                    self.enum_tags[q] = d["name"]
        # Records: find their definitions, anonymous enums by id.
        self.enum_by_id = {d["id"]: d for d in items if d["kind"] == "EnumDecl"}
        self.record_by_id = {d["id"]: d for d in items if d["kind"] == "RecordDecl"}
        for d in items:
            k = d["kind"]
            if k == "TypedefDecl":
                self.typedef(d)
            elif k == "RecordDecl" and d.get("completeDefinition") and d.get("name"):
                tag = f'{d["tagUsed"]} {d["name"]}'
                self.record(d, self.tag_typedef.get(tag, d["name"]), d["_module"])
            elif k == "EnumDecl" and d.get("name"):
                self.enum(d, d["name"], self.enum_tags.get("enum " + d["name"]), d["_module"])

    def prototypes(self):
        """`extern "C"` declarations of the headers' functions, grouped by header, parameters
        named by the comment beside each (`IN DAT_IA_HANDLE, /* ia_handle */`)."""
        texts = {}
        by_file = {}
        for d in self.items:
            if d["kind"] != "FunctionDecl" or d.get("storageClass") == "static":
                continue
            path = d["_file"]
            if path not in texts:
                texts[path] = open(path, "rb").read()
            params = []
            for i, p in enumerate(x for x in d.get("inner", []) if x["kind"] == "ParmVarDecl"):
                name = p.get("name")
                if not name:
                    off = p.get("loc", {}).get("offset")
                    line = texts[path][off:].split(b"\n", 1)[0].decode() if off is not None else ""
                    m = re.search(r"/\*\s*(\w+)\s*\*/", line)
                    name = m.group(1).lower() if m else f"arg{i}"
                params.append(f"{rust_ident(name)}: {self.rust(p['type']['qualType'])}")
            ret = d["type"]["qualType"].split("(")[0].strip()
            r = "" if ret == "void" else f" -> {self.rust(ret)}"
            by_file.setdefault(os.path.basename(path), []).append(
                f"    pub fn {d['name']}({', '.join(params)}){r};\n")
        for header, decls in by_file.items():
            self.out("prototypes", f"// {header}\nextern \"C\" {{\n{''.join(decls)}}}\n")

    def out(self, module, text):
        self.modules.setdefault(module, []).append(text)

    def rust(self, q):
        # A parameter `T *(x[])` has the type `T *(*)`: a `T **`.
        q = q.strip().replace("*(*)", "**")
        if q in BUILTIN:
            return BUILTIN[q]
        m = re.fullmatch(r"(.+?)\s*\(\*\)\((.*)\)", q)
        if m:
            ret = m.group(1).strip()
            args = split_args(m.group(2))
            rargs = []
            variadic = False
            for a in args:
                a = a.strip()
                if a == "...":
                    variadic = True
                elif a != "void":
                    rargs.append(self.rust(a))
            if variadic:
                rargs.append("...")
            r = "" if ret == "void" else f" -> {self.rust(ret)}"
            return f'Option<unsafe extern "C" fn({", ".join(rargs)}){r}>'
        m = re.fullmatch(r"(.+?)\s*\(\*\)\[(\d+)\]", q)
        if m:
            return f"*mut [{self.rust(m.group(1))}; {m.group(2)}]"
        m = re.fullmatch(r"(.+?)\s*\[(\d+)\]((?:\[\d+\])*)", q)
        if m:
            inner = m.group(1) + (" " + m.group(3) if m.group(3) else "")
            return f"[{self.rust(inner.replace(' [', '['))}; {m.group(2)}]"
        if q.endswith("*const"):
            return self.rust(q[: -len("const")])
        if q.endswith("*"):
            base = q[:-1].strip()
            if base.endswith("*const"):
                return f"*const {self.rust(base[: -len('const')])}"
            if base.endswith("*"):
                # A pointer to a pointer: its own constness is the inner pointer's pointee's.
                return f"*mut {self.rust(base)}"
            if base.startswith("const ") or base.endswith(" const"):
                return f"*const {self.rust(base.replace('const', '').strip())}"
            return f"*mut {self.rust(base)}"
        if q.startswith("const "):
            return self.rust(q[6:])
        if q in BUILTIN:
            return BUILTIN[q]
        if q.startswith("enum "):
            return self.enum_tags.get(q, "c_uint")
        if q.startswith("struct ") or q.startswith("union "):
            known = self.tag_typedef.get(q)
            if known:
                return known
            tag = q.split()[1]
            if tag not in self.emitted and not any(
                r.get("name") == tag and r.get("completeDefinition") for r in self.record_by_id.values()
            ):
                # Declared but never defined here (e.g. verbs' struct ibv_ah): opaque.
                self.emitted.add(tag)
                self.out("platform", f"#[repr(C)]\npub struct {tag} {{\n    _opaque: [u8; 0],\n}}\n")
            return tag
        return q

    def typedef(self, d):
        name = d["name"]
        t = d["type"]
        q = t["qualType"]
        desugared = t.get("desugaredQualType", q)
        mod = d["_module"]
        if name in self.emitted:
            return
        if desugared.startswith("enum "):
            if q == desugared:
                enum = self.find_enum(d, desugared)
                if enum is not None and not enum.get("name"):
                    self.enum(enum, name.lower(), name, mod)
                    return
                if enum is not None:
                    return  # emitted with the enum declaration
            self.emitted.add(name)
            self.out(mod, f"pub type {name} = {self.rust(q)};\n")
            return
        if re.fullmatch(r"(struct|union) \w+", q) and self.tag_typedef.get(q) == name:
            rec = self.find_record(d)
            if rec is not None and not rec.get("name"):
                self.record(rec, name, mod)
            return
        if re.fullmatch(r"(struct|union) \w+", q):
            target = self.rust(q)
            if target == name:
                return
            self.emitted.add(name)
            self.out(mod, f"pub type {name} = {target};\n")
            return
        # An anonymous struct/union/enum defined in the typedef itself.
        if q.startswith("struct ") or q.startswith("union ") or q.startswith("enum "):
            rec = self.find_record(d)
            if rec is not None:
                self.record(rec, name, mod)
                return
        self.emitted.add(name)
        self.out(mod, f"pub type {name} = {self.rust(q)};\n")

    def find_enum(self, d, desugared):
        for i in d.get("inner", []):
            for j in walk(i):
                if j.get("kind") == "EnumType":
                    return self.enum_by_id.get(j["decl"]["id"])
        return None

    def find_record(self, d):
        for i in d.get("inner", []):
            for j in walk(i):
                if j.get("kind") == "RecordType":
                    return self.record_by_id.get(j["decl"]["id"])
        return None

    def record(self, d, name, mod):
        if name in self.emitted:
            return
        self.emitted.add(name)
        kind = "union" if d["tagUsed"] == "union" else "struct"
        fields = []
        pending_anon = None
        for f in d.get("inner", []):
            if f["kind"] == "RecordDecl" and f.get("completeDefinition"):
                pending_anon = f
                continue
            if f["kind"] != "FieldDecl":
                continue
            q = f["type"]["qualType"]
            if pending_anon is not None and ("unnamed" in q or "anonymous" in q):
                # A C11 anonymous member has no name: Rust and cbindgen need one.
                fname = f.get("name") or f"anon{len(fields)}"
                f = dict(f, name=fname)
                # Outside the DAT namespace: a helper type C programs never name.
                sub = f"libdat_{name}_{fname}"
                self.record(pending_anon, sub, mod)
                fields.append((f["name"], sub))
                pending_anon = None
                continue
            fields.append((rust_ident(f["name"]), self.rust(q)))
        derive = "#[derive(Clone, Copy)]"
        body = "".join(f"    pub {n}: {t},\n" for n, t in fields)
        self.out(mod, f"#[repr(C)]\n{derive}\npub {kind} {name} {{\n{body}}}\n")

    def enum(self, d, tag, raw_name, mod):
        if tag in self.emitted:
            return
        self.emitted.add(tag)
        values = []
        nxt = 0
        for c in d.get("inner", []):
            if c["kind"] != "EnumConstantDecl":
                continue
            v = None
            for j in walk(c):
                if j.get("kind") == "ConstantExpr" and "value" in j:
                    v = int(j["value"])
                    break
            if v is None:
                v = nxt
            values.append((c["name"], v))
            nxt = v + 1
        signed = any(v < 0 for _, v in values)
        repr_ = "i32" if signed else "u32"
        seen = {}
        variants = []
        aliases = []
        for n, v in values:
            if v in seen:
                # Rust enums cannot repeat a value: an alias enumerator becomes an associated
                # constant naming the first enumerator of that value.
                aliases.append(f"pub const {n}: {repr_} = {seen[v]}_VALUE;\n".replace(f"{seen[v]}_VALUE", f"{tag}::{seen[v]} as {repr_}"))
                continue
            seen[v] = n
            lit = hex(v) if v > 255 else str(v)
            variants.append(f"    {n} = {lit},\n")
        text = ""
        if raw_name and raw_name not in self.emitted:
            self.emitted.add(raw_name)
            text += f"pub type {raw_name} = {repr_};\n"
        # repr(C) so cbindgen writes a C enum; the conversions come from c_enum! (the
        # variant list again, written here by the generator, never by hand).
        names = ", ".join(n for n, v in values if seen.get(v) == n)
        self.emitted_enum_variants[tag] = {n for n, v in values if seen.get(v) == n}
        self.enum_module[tag] = mod
        if any(v > 0x7FFFFFFF for _, v in values):
            # Beyond a C int (DAT 1.2's DAT_NOT_IMPLEMENTED): C makes the enum unsigned; the
            # library is built for 64-bit targets only.
            text += "#[allow(clippy::enum_clike_unportable_variant)]\n"
        text += (f"#[repr(C)]\n#[derive(Clone, Copy, Debug, PartialEq, Eq)]\n"
                 f"pub enum {tag} {{\n{''.join(variants)}}}\n"
                 f"c_enum!({tag}: {repr_}; {names});\n")
        text += "".join(aliases)
        self.out(mod, text)

    def macros(self, ref, tmp, probe, subdir):
        defs = run(["gcc", "-I", ref, "-dM", "-E", probe])
        base_file = os.path.join(tmp, "base.c")
        with open(base_file, "w") as f:
            f.write("#include <netinet/in.h>\n#include <sys/types.h>\n#include <inttypes.h>\n#include <sys/socket.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdarg.h>\n")
        base = set(l.split()[1] for l in run(["gcc", "-dM", "-E", base_file]).splitlines() if l.startswith("#define"))
        where = {}
        for h in os.listdir(os.path.join(ref, subdir)):
            for line in open(os.path.join(ref, subdir, h), errors="replace"):
                m = re.match(r"\s*#\s*define\s+(\w+)\s", line)
                if m:
                    where.setdefault(m.group(1), FILE_TO_MODULE.get(h, "dat"))
        names = []
        for l in defs.splitlines():
            m = re.match(r"#define (\w+)(\(?)", l)
            if not m or m.group(2) or m.group(1) in base or m.group(1) not in where:
                continue
            if m.group(1).startswith("_"):
                continue
            names.append(m.group(1))
        # Evaluate every candidate in one program; those that are not integer constants are
        # found by compiling each once.
        good = []
        for n in names:
            src = os.path.join(tmp, "m.c")
            with open(src, "w") as f:
                f.write(f'#include "{probe}"\n_Static_assert(__builtin_classify_type({n}) == 1 || __builtin_classify_type({n}) == 3, "int");\n'
                        f"enum {{ probe_{n} = (int)(({n}) != 0) }};\n")
            r = subprocess.run(["gcc", "-I", ref, "-fsyntax-only", src], capture_output=True)
            if r.returncode == 0:
                good.append(n)
        src = os.path.join(tmp, "v.c")
        with open(src, "w") as f:
            f.write(f'#include "{probe}"\n#include <stdio.h>\nint main(void) {{\n')
            for n in good:
                f.write(f'  printf("%s %zu %d %llu\\n", "{n}", sizeof({n}), ((__typeof__({n}))-1) < 0, (unsigned long long)({n}));\n')
            f.write("  return 0;\n}\n")
        exe = os.path.join(tmp, "v")
        run(["gcc", "-I", ref, "-o", exe, src])
        enumerators = set()
        enum_of = {}  # enumerator -> the Rust enum that has it as a variant
        for d in self.items:
            if d["kind"] == "EnumDecl":
                names = [c["name"] for c in d.get("inner", []) if c["kind"] == "EnumConstantDecl"]
                enumerators |= set(names)
                tag = d.get("name") or self.enum_tags.get(f"enum {d.get('name')}")
                for n in names:
                    enum_of[n] = tag
        bodies = {}
        for l in defs.splitlines():
            m = re.match(r"#define (\w+) (\w+)\s*$", l)
            if m:
                bodies[m.group(1)] = m.group(2)
        variant_tags = {}
        for d in self.items:
            if d["kind"] == "EnumDecl":
                tag = d.get("name")
                for c in d.get("inner", []):
                    if c["kind"] == "EnumConstantDecl":
                        variant_tags[c["name"]] = tag
        for line in run([exe]).splitlines():
            n, size, signed, value = line.split()
            size, signed, value = int(size), int(signed), int(value)
            if n in enumerators:
                continue
            alias = bodies.get(n)
            if alias in enumerators and variant_tags.get(alias) and variant_tags[alias] in self.emitted_enum_variants \
                    and alias in self.emitted_enum_variants[variant_tags[alias]]:
                # A macro naming an enumerator keeps the enum's type (C++ needs it).
                tag = variant_tags[alias]
                # Declared beside its enum, so the header that has the enum has the macro.
                self.out(self.enum_module[tag], f"pub const {n}: {tag} = {tag}::{alias};")
                continue
            ty = {(8, 0): "u64", (8, 1): "i64", (4, 0): "u32", (4, 1): "i32"}.get((size, signed), "i32")
            if signed and value >= 1 << 63:
                value -= 1 << 64  # printed through unsigned long long
            lit = hex(value) if value > 255 else str(value)
            self.out(where[n], f"pub const {n}: {ty} = {lit};")


RUST_KEYWORDS = {"type", "match", "ref", "mod", "fn", "impl", "move", "loop", "use", "where", "self", "box", "in", "as"}


def rust_ident(name):
    return f"r#{name}" if name in RUST_KEYWORDS else name


def walk(node):
    yield node
    for i in node.get("inner", []):
        yield from walk(i)


def split_args(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


if __name__ == "__main__":
    main()
