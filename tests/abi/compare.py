#!/usr/bin/env python3
"""Mechanical ABI comparison of two DAT 2.0 header sets, or of two DAT 1.2 ones (`--set 1.2`).

usage: compare.py [--set 1.2] REF_INCLUDE_DIR OUR_INCLUDE_DIR   (each holds dat2/*.h, or dat/*.h)

Every item is enumerated from the headers themselves (clang's AST, gcc -dM), never from a
hand-written list: every struct and union (size, alignment, offset and size of every member),
every enumerator's value, every typedef (size, signedness, kind), every integer object-like
macro's value, the existence and parameter count of every other macro, and every function
prototype (and that a C program and a C++ one call each by its C name, or with --set 1.2 by its
name in version DAT_1.2, which our 1.2 headers bind it to), the const qualifier of every
member, what every other macro expands to (its tokens, arguments numbered, redundant parentheses
dropped), the tag behind every typedef of a struct, union or enum (`typedef struct dat_event
{...} DAT_EVENT;` lets C spell `struct dat_event`), and the C++ linkage name of a probe
function taking a pointer to each typedef (`void f(DAT_EVENT *)` is `_Z1fP9dat_event` only when
the tag is there; an integer typedef mangles by its underlying type, `unsigned long` or
`unsigned long long`). Run once with <dat2/udat.h> alone and once with
<dat2/dat_ib_extensions.h> too; DAT 1.2 (no IB extension) once with <dat/udat.h>. Prints each
difference; exits 1 if there is any.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

# Per DAT version: the headers' directory, and the sets of headers compiled together.
VERSIONS = {
    "2.0": ("dat2", {
        "udat.h": ["dat2/udat.h", "dat2/dat_registry.h"],
        "udat.h+dat_ib_extensions.h": ["dat2/udat.h", "dat2/dat_registry.h", "dat2/dat_ib_extensions.h"],
    }),
    "1.2": ("dat", {
        "dat/udat.h": ["dat/udat.h", "dat/dat_registry.h"],
    }),
}
DIR, SETS = VERSIONS["2.0"]
# compat-dapl's DAT 1.2 headers declare their functions without `extern "C"`: a C++ program
# built against them references mangled names (`_Z11dat_ep_freePv`) that no C library defines.
# Ours declare them with C linkage. With this set, a reference call by a mangled name counts as
# the same call as ours by that function's C name, and is reported as a note, not a difference.
CXX_LINKAGE_FIXED = False
# Our DAT 1.2 headers bind every call to the library's 1.2 entry points with `.symver`: a call
# references `dat_x@DAT_1.2`, which the link resolves to the `dat_x` of version DAT_1.2, the
# one a program built against the reference and its library imports too. With this set, such a
# reference counts as the same call as the reference's by the plain name, and is reported as a
# note; any other version is a difference.
SYMBOL_VERSION = None
PRELUDE = "#include <netinet/in.h>\n"  # OpenFabrics' dat_ib_extensions.h needs sockaddr_in6


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[:3000]}")
    return r.stdout


def tu(tmp, headers):
    path = os.path.join(tmp, "tu.c")
    with open(path, "w") as f:
        f.write(PRELUDE + "".join(f"#include <{h}>\n" for h in headers))
    return path


def scan(inc, headers, tmp):
    """What a header set declares: records, enumerators, typedefs, functions, macros."""
    src = tu(tmp, headers)
    ast = json.loads(run(["clang", "-I", inc, "-Xclang", "-ast-dump=json", "-fsyntax-only", src]))
    tag_name = {}  # record id -> the name we compare it by
    records, enumerators, typedefs, functions, tags, static = {}, set(), {}, {}, {}, set()
    consts = set()
    cur = None
    decls = []
    for d in ast["inner"]:
        loc = d.get("loc", {})
        f = loc.get("file") or loc.get("spellingLoc", {}).get("file") or loc.get("expansionLoc", {}).get("file")
        if f:
            cur = f
        if cur and f"/{DIR}/" in cur:
            decls.append(d)
    # Records are compared by typedef name (tags may differ: cbindgen names a struct's tag
    # after its typedef), and tag-only records by tag.
    by_id = {d["id"]: d for d in decls if d["kind"] == "RecordDecl"}
    for d in decls:
        if d["kind"] == "TypedefDecl":
            for node in walk(d):
                if node.get("kind") == "RecordType":
                    rid = node["decl"]["id"]
                    if rid in by_id and node is not d and d["type"]["qualType"].split()[-1] not in ("*",):
                        if "*" not in d["type"]["qualType"] and rid not in tag_name:
                            tag_name[rid] = d["name"]
                    break
    for d in decls:
        k = d["kind"]
        if k == "RecordDecl" and d.get("completeDefinition"):
            name = tag_name.get(d["id"]) or d.get("name")
            if name:
                records[name] = fields(d, by_id)
                consts |= {f"{name}.{m}" for m in const_members(d)}
        elif k == "EnumDecl":
            enumerators |= {c["name"] for c in d.get("inner", []) if c["kind"] == "EnumConstantDecl"}
        elif k == "TypedefDecl":
            typedefs[d["name"]] = d["type"].get("desugaredQualType", d["type"]["qualType"])
            tag = tag_of(d)
            if tag:
                tags[d["name"]] = tag
        elif k == "FunctionDecl":
            functions[d["name"]] = norm_proto(d)
            if d.get("storageClass") == "static":
                static.add(d["name"])
    macros = {}
    base = set(m.split()[1].split("(")[0] for m in run(["gcc", "-dM", "-E", base_tu(tmp)]).splitlines())
    for line in run(["gcc", "-I", inc, "-dM", "-E", src]).splitlines():
        m = re.match(r"#define (\w+)(\(([^)]*)\))?", line)
        if m and m.group(1) not in base and not m.group(1).startswith("_"):
            macros[m.group(1)] = None if m.group(2) is None else len([a for a in m.group(3).split(",") if a.strip()])
    return records, enumerators, typedefs, functions, macros, tags, static, consts


def tag_of(typedef):
    """`struct dat_event` for a typedef of a tagged struct (through other typedefs too),
    `struct (anonymous)` for an untagged one, None when the typedef is no struct, union or enum."""
    node, word = typedef["inner"][0], None
    while True:
        kind = node["kind"]
        if kind in ("RecordType", "EnumType"):
            return f"{word or 'enum'} {node['decl'].get('name') or '(anonymous)'}"
        if kind == "ElaboratedType":
            first = node["type"]["qualType"].split()[0]
            word = first if first in ("struct", "union", "enum") else word
        elif kind != "TypedefType":
            return None
        node = node["inner"][0]


def cxx_names(inc, headers, tmp, names):
    """The C++ linkage name of `void libdat_probe_T(T *)` for each typedef T, compiled by g++."""
    src = os.path.join(tmp, "probe.cc")
    with open(src, "w") as f:
        f.write(PRELUDE + "".join(f"#include <{h}>\n" for h in headers))
        f.writelines(f"void libdat_probe_{n}({n} *) {{}}\n" for n in sorted(names))
    obj = os.path.join(tmp, "probe.o")
    run(["g++", "-w", "-c", "-I", inc, "-o", obj, src])
    out = {}
    for line in run(["nm", "--defined-only", obj]).splitlines():
        sym = line.split()[-1]
        m = re.match(r"_Z(\d+)", sym)
        if m:
            fn = sym[m.end():m.end() + int(m.group(1))]
            out[fn[len("libdat_probe_"):]] = sym
    return out


def base_tu(tmp):
    path = os.path.join(tmp, "base.c")
    with open(path, "w") as f:
        f.write(PRELUDE + "#include <stdint.h>\n#include <stddef.h>\n#include <stdarg.h>\n#include <stdio.h>\n"
                "#include <sys/types.h>\n#include <inttypes.h>\n#include <sys/socket.h>\n#include <linux/types.h>\n")
    return path


def walk(n):
    yield n
    for i in n.get("inner", []):
        yield from walk(i)


def const_members(rec, prefix=""):
    """Member paths of a record whose type is const-qualified (at its top or its elements')."""
    out = set()
    pending = None
    for f in rec.get("inner", []):
        if f["kind"] == "RecordDecl":
            pending = f
            continue
        if f["kind"] != "FieldDecl":
            continue
        name = f.get("name")
        if not name and pending is not None:
            out |= const_members(pending, prefix)
        elif name and re.match(r"const\b", f["type"]["qualType"]):
            out.add(prefix + name)
        pending = None
    return out


def fields(rec, by_id, prefix=""):
    """Member paths of a record, descending into anonymous members."""
    out = []
    pending = None
    for f in rec.get("inner", []):
        if f["kind"] == "RecordDecl":
            pending = f
            continue
        if f["kind"] != "FieldDecl":
            continue
        name = f.get("name")
        if not name and pending is not None:
            # A C11 anonymous member: its members belong to the parent.
            out += fields(pending, by_id, prefix)
        elif name:
            out.append(prefix + name)
        pending = None
    return out


def norm_proto(d):
    """A prototype as return and parameter types (names dropped, top-level const ignored)."""
    t = d["type"]["qualType"]
    m = re.match(r"(.*?)\s*\((.*)\)$", t)
    ret, params = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in params:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    norm = []
    for p in parts:
        p = p.strip()
        p = re.sub(r"\s*\bconst\s*$", "", p)  # top-level const of a pointer parameter
        if re.fullmatch(r"const\s+\w+", p) and not p.endswith("*"):
            p = p.split()[1]  # top-level const of a value parameter
        norm.append(re.sub(r"\s+", " ", p))
    # `T *(x[])` and `T **` are one parameter type.
    return f"{ret} ({', '.join(norm)})".replace("*(*)", "**")


def probe(inc, headers, tmp, records, enumerators, typedefs, int_macros, typedef_names):
    lines = [PRELUDE] + [f"#include <{h}>\n" for h in headers] + ["#include <stdio.h>\n#include <stddef.h>\nint main(void) {\n"]
    for name, members in sorted(records.items()):
        ty = name if name in typedef_names else f"struct {name}"
        lines.append(f'printf("record {name} size=%zu align=%zu\\n", sizeof({ty}), _Alignof({ty}));\n')
        for m in members:
            lines.append(f'printf("record {name}.{m} offset=%zu size=%zu\\n", offsetof({ty}, {m}), sizeof((({ty} *)0)->{m}));\n')
    for e in sorted(enumerators):
        lines.append(f'printf("enumerator {e}=%lld\\n", (long long){e});\n')
    for t in sorted(typedefs):
        lines.append(f'printf("typedef {t} size=%zu class=%d signed=%d\\n", sizeof({t}), '
                     f'__builtin_classify_type(*({t} *)0), __builtin_classify_type(*({t} *)0) <= 3 ? (int)((({t})-1) < ({t})0) : -1);\n')
    # An integer macro's type is compared with its value (its size, and whether it stays
    # signed beside an int): programs compare and combine the macros with variables of their
    # own types. A bare 4294967295 is a long, the reference's ((DAT_TIMEOUT) ~0) an unsigned
    # int: an int -1 equals the second and not the first (compat-dapl's dapltest took its
    # infinite wait for a timed one); a mask that is an int where the reference's is a
    # UINT64_C is read as 64 bits by printf("%" PRIx64) and overflows when shifted by 32.
    for m in sorted(int_macros):
        lines.append(f'printf("macro {m}=%lld size=%zu signed=%d\\n", (long long)({m}), sizeof({m}), '
                     f'(int)((0 ? ({m}) : -1) < 0));\n')
    lines.append("return 0;\n}\n")
    src = os.path.join(tmp, "probe.c")
    with open(src, "w") as f:
        f.writelines(lines)
    exe = os.path.join(tmp, "probe")
    run(["gcc", "-w", "-I", inc, "-o", exe, src])
    return set(run([exe]).splitlines())


def function_symbols(inc, headers, tmp, names, cxx):
    """The symbols a C++ program (cxx), or a C one, references to call each function (a C++
    one unmangled under extern "C"; either bound to a version by `.symver`, `name@VERSION`)."""
    src = os.path.join(tmp, "calls.cc" if cxx else "calls.c")
    with open(src, "w") as f:
        f.write(PRELUDE + "".join(f"#include <{h}>\n" for h in headers))
        f.write("extern void *const libdat_fns[] = {\n" + "".join(f"(void *)&{n},\n" for n in sorted(names)) + "};\n")
    obj = os.path.join(tmp, "calls.o")
    run(["g++" if cxx else "gcc", "-w", "-c", "-I", inc, "-o", obj, src])
    return set(run(["nm", "--undefined-only", obj]).split()) - {"U"}


def integer_macros(inc, headers, tmp, names):
    """The object-like macros that are integer constant expressions. All are tried in one
    translation unit, each on a line of its own (macro expansion not tracked, so an error is
    reported on the line that used the macro); those whose line has an error, and all of them
    when an error has no such line, are tried again alone, as an error may spill onto the next
    line. The answer is the one trying each alone gives, in a few compilations instead of one
    per macro."""
    head = PRELUDE + "".join(f"#include <{h}>\n" for h in headers)

    def check(batch, name):
        src = os.path.join(tmp, name)
        with open(src, "w") as f:
            f.write(head)
            for i, n in enumerate(batch):
                f.write(f"_Static_assert(__builtin_classify_type({n}) <= 3, \"\"); "
                        f"enum {{ libdat_probe_{i} = ({n}) ? 1 : 0 }};\n")
        r = subprocess.run(["gcc", "-w", "-fsyntax-only", "-fmax-errors=0", "-ftrack-macro-expansion=0",
                            "-I", inc, src], capture_output=True, text=True)
        at = [re.match(rf"{re.escape(src)}:(\d+):", e) for e in r.stderr.splitlines() if ": error:" in e]
        if r.returncode != 0 and (not at or None in at):
            return None  # an error outside the probes' lines: nothing is known
        first = head.count("\n") + 1
        lines = {int(m.group(1)) - first for m in at}
        return [n for i, n in enumerate(batch) if i not in lines], [n for i, n in enumerate(batch) if i in lines]

    known = check(names, "m.c")
    good, suspects = known if known is not None else ([], list(names))
    for n in suspects:
        alone = check([n], "m1.c")
        if alone is not None and alone[0]:
            good.append(n)
    return [n for n in names if n in set(good)]


TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|##|#|->|<<|>>|[<>=!]=|&&|\|\||\S")

# Macros whose expansion differs on purpose: the reference's does not compile (a misspelt
# argument, an unbalanced parenthesis) or names another operation; ours does what its name says.
# Anything else that expands differently is a difference.
MACRO_FIXES = {
    "dat_ib_collective_alltoallv": "the reference passes `senddispls`, no parameter of it",
    "dat_ib_collective_gatherv": "the reference passes `recvbuf`, no parameter of it",
    "dat_ib_collective_read_clock": "the reference has an unbalanced parenthesis",
    "dat_ib_collective_set_clock": "the reference passes `user_contex` and the READ_CLOCK operation",
    # DAT 1.2 (compat-dapl)
    "DAT_SRQ_CREATE": "the reference dispatches through `srq`, the pointer the call fills in; ours through the IA",
}


def number(token):
    """An integer literal by its value and suffix (`0x0000FFFF` is `65535`); others as they are."""
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)([uUlL]*)", token)
    if not m:
        return token
    digits = m.group(1)
    value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") else int(digits)
    return f"{value}{m.group(2).lower()}"


def without_redundant_parentheses(tokens):
    """Drops the parentheses around a single token (but a call's argument), then those around a
    parenthesized group and around the whole: `((T)(x))`, `(T) x` and `T x` compare equal."""
    tokens = [number(t) for t in tokens]
    out, i = [], 0
    while i < len(tokens):
        single = tokens[i] == "(" and i + 2 < len(tokens) and tokens[i + 2] == ")" and tokens[i + 1] not in "()"
        called = i > 0 and re.match(r"\w", tokens[i - 1])
        if single and not called:
            out.append(tokens[i + 1])
            i += 3
        else:
            out.append(tokens[i])
            i += 1
    tokens = out
    changed = True
    while changed:
        changed = False
        for i, t in enumerate(tokens):
            if t != "(":
                continue
            j = closing(tokens, i)
            inner = tokens[i + 1:j]
            doubled = len(inner) >= 2 and inner[0] == "(" and closing(inner, 0) == len(inner) - 1
            whole = i == 0 and j == len(tokens) - 1 and inner
            if doubled or whole:
                tokens = tokens[:i] + inner + tokens[j + 1:]
                changed = True
                break
    return tokens


def closing(tokens, i):
    """The index of the parenthesis that closes the one at `i`."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j] == "("
        depth -= tokens[j] == ")"
        if depth == 0:
            return j
    return len(tokens) - 1


def expansions(inc, headers, tmp, macros):
    """What each macro expands to, with numbered arguments: `M` or `M(libdat_arg0, ...)` through
    the preprocessor, as tokens without redundant parentheses."""
    src = os.path.join(tmp, "expand.c")
    with open(src, "w") as f:
        f.write(PRELUDE + "".join(f"#include <{h}>\n" for h in headers))
        for name, arity in sorted(macros.items()):
            call = name if arity is None else f"{name}({', '.join(f'libdat_arg{i}' for i in range(arity))})"
            f.write(f"libdat_macro {name} = {call} libdat_end\n")
    text = " ".join(run(["gcc", "-I", inc, "-E", "-P", src]).split())
    out = {}
    for m in re.finditer(r"libdat_macro (\w+) = (.*?) libdat_end", text):
        out[m.group(1)] = " ".join(without_redundant_parentheses(TOKEN.findall(m.group(2))))
    return out


def c_name(symbol):
    """The function name inside an Itanium-mangled `_Z<length><name>...` symbol."""
    m = re.match(r"_Z(\d+)", symbol)
    return symbol[m.end():m.end() + int(m.group(1))] if m else symbol


def compare(ref, ours, headers, label, notes):
    diffs = []
    facts = 0
    with tempfile.TemporaryDirectory() as tmp:
        r = scan(ref, headers, tmp)
        o = scan(ours, headers, tmp)
        names = ["record", "enumerator", "typedef", "function", "macro", "tag"]
        for i, what in enumerate(names[:5]):
            for missing in sorted(set(r[i]) - set(o[i])):
                diffs.append(f"{label}: {what} {missing}: in the reference only")
            for extra in sorted(set(o[i]) - set(r[i])):
                # Everything we add enters a program's namespace (even a libdat_* typedef).
                diffs.append(f"{label}: {what} {extra}: in ours only")
        # Members present on one side only.
        for name in sorted(set(r[0]) & set(o[0])):
            if set(r[0][name]) != set(o[0][name]):
                diffs.append(f"{label}: record {name} members differ: {sorted(set(r[0][name]) ^ set(o[0][name]))}")
        for f in sorted(set(r[3]) & set(o[3])):
            facts += 1
            if r[3][f] != o[3][f]:
                diffs.append(f"{label}: prototype {f}: reference `{r[3][f]}`, ours `{o[3][f]}`")
        for m in sorted(set(r[4]) & set(o[4])):
            facts += 1
            if r[4][m] != o[4][m]:
                diffs.append(f"{label}: macro {m}: parameters {r[4][m]} vs {o[4][m]}")
        same_shape = {m: r[4][m] for m in set(r[4]) & set(o[4]) if r[4][m] == o[4][m] and m not in MACRO_FIXES}
        rx, ox = expansions(ref, headers, tmp, same_shape), expansions(ours, headers, tmp, same_shape)
        for m in sorted(same_shape):
            facts += 1
            if rx.get(m) != ox.get(m):
                diffs.append(f"{label}: macro {m} expands to `{ox.get(m)}`, the reference's to `{rx.get(m)}`")
        for what in sorted(r[7] ^ o[7]):
            if what.split(".")[0] in r[0] and what.split(".")[0] in o[0]:
                facts += 1
                diffs.append(f"{label}: member {what} is const in {'the reference' if what in r[7] else 'ours'} only")
        called = {f for f in set(r[3]) & set(o[3]) if f not in r[6]}
        def plain(syms):
            """Our calls bound to SYMBOL_VERSION, counted as calls by the plain name."""
            if not SYMBOL_VERSION:
                return syms, 0
            versioned = {sym for sym in syms if sym.endswith("@" + SYMBOL_VERSION)}
            return (syms - versioned) | {sym.split("@")[0] for sym in versioned}, len(versioned)

        rc_, oc_ = function_symbols(ref, headers, tmp, called, False), function_symbols(ours, headers, tmp, called, False)
        oc_, bound_c = plain(oc_)
        facts += len(called)
        for sym in sorted(rc_ ^ oc_):
            diffs.append(f"{label}: a C call references {sym} with {'the reference' if sym in rc_ else 'ours'} only")
        rs, os_ = function_symbols(ref, headers, tmp, called, True), function_symbols(ours, headers, tmp, called, True)
        os_, bound_cxx = plain(os_)
        facts += len(called)
        if SYMBOL_VERSION:
            notes.append(f"{label}: our calls bound to version {SYMBOL_VERSION} by .symver: {bound_c} from C, {bound_cxx} from C++")
        if CXX_LINKAGE_FIXED:
            mangled = {sym: c_name(sym) for sym in rs if sym != c_name(sym) and c_name(sym) in called and c_name(sym) in os_}
            rs = (rs - set(mangled)) | set(mangled.values())
            notes.append(f"{label}: {len(mangled)} functions the reference declares with C++ linkage, ours with C linkage")
        for sym in sorted(rs ^ os_):
            diffs.append(f"{label}: a C++ call references {sym} with {'the reference' if sym in rs else 'ours'} only")
        both = set(r[2]) & set(o[2])
        for t in sorted(both & (set(r[5]) | set(o[5]))):
            facts += 1
            if r[5].get(t) != o[5].get(t):
                diffs.append(f"{label}: tag of {t}: reference `{r[5].get(t)}`, ours `{o[5].get(t)}`")
        rc, oc = cxx_names(ref, headers, tmp, both), cxx_names(ours, headers, tmp, both)
        for t in sorted(both):
            facts += 1
            if rc.get(t) != oc.get(t):
                diffs.append(f"{label}: C++ name of a `{t} *` parameter: reference {rc.get(t)}, ours {oc.get(t)}")
        common_records = {k: [m for m in v if m in o[0][k]] for k, v in r[0].items() if k in o[0]}
        common_enums = r[1] & o[1]
        common_typedefs = {k: v for k, v in r[2].items()
                           if k in o[2] and not re.match(r"(struct|union)\b", v) and "(" not in v and "[" not in v}
        object_macros = sorted(m for m in set(r[4]) & set(o[4]) if r[4][m] is None and o[4][m] is None)
        int_macros = sorted(set(integer_macros(ref, headers, tmp, object_macros)) & set(integer_macros(ours, headers, tmp, object_macros)))
        names_both = set(r[2]) & set(o[2])
        pr = probe(ref, headers, tmp, common_records, common_enums, common_typedefs, int_macros, names_both)
        po = probe(ours, headers, tmp, common_records, common_enums, common_typedefs, int_macros, names_both)
        facts += len(pr)
        for line in sorted(pr - po):
            head = line.split("=")[0]
            # `record X.m offset=...` is keyed by `record X.m `; `macro M=...` by `macro M=`.
            key = head.rsplit(" ", 1)[0] + " " if head.count(" ") >= 2 else head + "="
            theirs = [x for x in po if x.startswith(key)]
            diffs.append(f"{label}: {line}  (ours: {theirs[0] if theirs else 'absent'})")
    return facts, diffs


def main():
    global DIR, SETS, CXX_LINKAGE_FIXED, SYMBOL_VERSION
    args = sys.argv[1:]
    if args[:1] == ["--set"]:
        DIR, SETS = VERSIONS[args[1]]
        CXX_LINKAGE_FIXED = args[1] == "1.2"
        SYMBOL_VERSION = "DAT_1.2" if args[1] == "1.2" else None
        args = args[2:]
    ref, ours = args[0], args[1]
    total, all_diffs, notes = 0, [], []
    for label, headers in SETS.items():
        facts, diffs = compare(ref, ours, headers, label, notes)
        total += facts
        all_diffs += diffs
    for d in all_diffs:
        print(d)
    for n in notes:
        print(f"note: {n}")
    print(f"abi: {total} facts compared, {len(all_diffs)} differences")
    sys.exit(1 if all_diffs else 0)


if __name__ == "__main__":
    main()
