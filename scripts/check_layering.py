#!/usr/bin/env python3
"""Fails the build when an #include breaks seam's layering (../shared/DESIGN.md).

Rules, checked on every build:
  1. A module (src/<m>/) includes only its own headers, the public API (include/seam/) and the
     internal headers of modules in a strictly lower layer: never upward, never sideways.
  2. The seam modules a module declares in CMakeLists.txt (`seam_module(m DEPS ...)`) are exactly
     the ones its files use: an internal header of that module, or a public header it implements.
  3. apps/ and examples/ are written against include/seam/ alone.

Usage: check_layering.py SOURCE_DIR | --selftest
"""
import re
import sys
from pathlib import Path

# Lowest first. Modules on one line are siblings and must not include each other.
LAYERS = [
    ["core"],
    ["format"],
    ["compute", "tokenizer", "chat"],
    ["model"],
    ["runtime"],
    ["generate"],
    ["observe", "server"],
]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}

# Which module implements each public header (a header-only one counts as core's).
PUBLIC_OWNER = {
    "error.h": "core",
    "types.h": "core",
    "cpu.h": "compute",
    "chat.h": "chat",
    "model.h": "runtime",
    "session.h": "runtime",
    "inspect.h": "runtime",
    "perplexity.h": "runtime",
    "quantize.h": "runtime",
    "generate.h": "generate",
    "observe.h": "observe",
    "server.h": "server",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = ("*.h", "*.cpp")


def includes(path):
    return INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace"))


def files(folder):
    return sorted(p for pattern in SOURCES for p in folder.rglob(pattern))


def declared_deps(cmake_text):
    deps = {}
    for m in re.finditer(r"seam_module\((\w+)([^)]*)\)", cmake_text):
        words = m.group(2).split()
        listed = words[words.index("DEPS") + 1:] if "DEPS" in words else []
        deps[m.group(1)] = {w[len("seam_"):] for w in listed if w.startswith("seam_")}
    return deps


def public_closure(root, header, seen=None):
    """A public header and the public headers it includes, transitively."""
    seen = set() if seen is None else seen
    if header in seen:
        return seen
    seen.add(header)
    path = root / "include" / "seam" / header
    if path.exists():
        for inc in includes(path):
            if inc.startswith("seam/"):
                public_closure(root, inc[len("seam/"):], seen)
    return seen


def check(root):
    errors = []
    modules = sorted(p.name for p in (root / "src").iterdir() if p.is_dir())
    deps = declared_deps((root / "CMakeLists.txt").read_text())

    for header in sorted(p.name for p in (root / "include" / "seam").glob("*.h")):
        if header not in PUBLIC_OWNER:
            errors.append(f"include/seam/{header}: add it to PUBLIC_OWNER in {Path(__file__).name}")

    for m in modules:
        if m not in RANK:
            errors.append(f"src/{m}: not in LAYERS of {Path(__file__).name}; give it a layer")
            continue
        used = set()
        for f in files(root / "src" / m):
            for inc in includes(f):
                rel = f.relative_to(root)
                if inc.startswith("seam/"):
                    for h in public_closure(root, inc[len("seam/"):]):
                        owner = PUBLIC_OWNER.get(h)
                        if owner and owner != m:
                            if RANK.get(owner, -1) >= RANK[m]:
                                errors.append(f"{rel}: public {h} belongs to {owner}, "
                                              f"which is not below {m}")
                            used.add(owner)
                    continue
                target = inc.split("/", 1)[0] if "/" in inc else m
                if target == m or target not in RANK:
                    continue
                if RANK[target] >= RANK[m]:
                    side = "sideways" if RANK[target] == RANK[m] else "upward"
                    errors.append(f'{rel}: #include "{inc}" goes {side} ({m} -> {target})')
                used.add(target)
        declared = deps.get(m)
        if declared is None:
            errors.append(f"src/{m}: no seam_module({m} ...) in CMakeLists.txt")
            continue
        for missing in sorted(used - declared):
            errors.append(f"CMakeLists.txt: seam_module({m}) uses {missing} but does not list "
                          f"seam_{missing} in DEPS")
        for extra in sorted(declared - used):
            errors.append(f"CMakeLists.txt: seam_module({m}) lists seam_{extra} in DEPS but "
                          f"includes nothing of it")

    for top in ("apps", "examples"):
        for f in files(root / top):
            for inc in includes(f):
                head = inc.split("/", 1)[0]
                if "/" in inc and head in RANK:
                    errors.append(f'{f.relative_to(root)}: #include "{inc}" is internal; '
                                  f"{top}/ uses include/seam/ only")

    return errors


def selftest():
    """Each rule, broken once in a scratch tree, must be reported; the clean tree must pass."""
    import tempfile

    def tree(root, extra):
        layout = {
            "CMakeLists.txt": "seam_module(core DEPS Threads::Threads)\n"
                              "seam_module(format DEPS seam_core)\n"
                              "seam_module(chat DEPS seam_core)\n"
                              "seam_module(compute DEPS seam_core seam_format)\n",
            "include/seam/error.h": "",
            "src/core/a.cpp": '#include "core/a.h"\n#include "seam/error.h"\n',
            "src/format/b.cpp": '#include "core/a.h"\n',
            "src/chat/c.cpp": '#include "seam/error.h"\n',
            "src/compute/d.cpp": '#include "format/b.h"\n#include "core/a.h"\n',
            "apps/seam/main.cpp": '#include "seam/error.h"\n',
        }
        layout.update(extra)
        for name, text in layout.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)

    cases = {
        "clean": ({}, None),
        "upward": ({"src/format/b.cpp": '#include "core/a.h"\n#include "compute/d.h"\n'}, "upward"),
        "sideways": ({"src/chat/c.cpp": '#include "compute/d.h"\n'}, "sideways"),
        "undeclared": ({"src/chat/c.cpp": '#include "format/b.h"\n'}, "does not list seam_format"),
        "unused": ({"src/compute/d.cpp": '#include "format/b.h"\n'}, "includes nothing of it"),
        "app": ({"apps/seam/main.cpp": '#include "format/b.h"\n'}, "is internal"),
        "public": ({"include/seam/new.h": ""}, "PUBLIC_OWNER"),
    }
    failed = 0
    for name, (extra, expect) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            tree(Path(d), extra)
            errors = check(Path(d))
        ok = not errors if expect is None else any(expect in e for e in errors)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {errors or 'no errors'}")
        failed += not ok
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--selftest"]:
        return selftest()
    errors = check(Path(argv[1] if len(argv) > 1 else ".").resolve())
    for e in errors:
        print(f"layering: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
