#!/bin/sh
# The per-CPU-level kernel units (src/compute/*_avx2.cpp, *_avx512.cpp, *_amx.cpp) are
# compiled with AVX flags; baseline code must never run their code before the
# dispatch has checked the CPU. So every function they export must be one of
# their level's kernels (named in a ::avx2:: / ::avx512:: namespace), and none
# may be weak: a weak (inline or template) definition there could be the copy
# the linker keeps for baseline callers, an illegal instruction on older CPUs.
# Nor may they have start-up code (static initializers run on every CPU).
# Usage: check_level_symbols.sh NM libseam_compute.a
nm_tool=$1
lib=$2
"$nm_tool" -C --defined-only "$lib" | awk '
  /\.o:$/ { unit = $0; level = ""
            if (unit ~ /_avx2\.cpp\.o:$/) level = "avx2"
            if (unit ~ /_avx512\.cpp\.o:$/) level = "avx512"
            if (unit ~ /_amx\.cpp\.o:$/) level = "amx"
            if (level != "") units++
            next }
  level == "" || NF < 3 { next }
  { type = $2; name = $0; sub(/^[0-9a-f]+ . /, "", name) }
  type == "W" { print "weak function in " unit " " name; bad++ }
  name ~ /_GLOBAL__sub_I/ { print "static initializer in " unit " " name; bad++ }
  type == "T" && index(name, "::" level "::") == 0 { print "exported outside its level namespace in " unit " " name; bad++ }
  END { if (units < 1) { print "no *_avx2 / *_avx512 units found in the archive"; exit 1 }
        if (bad) exit 1
        print units " level units checked: no weak or stray exported functions" }'
