#!/usr/bin/env python3
"""Lists the public items of flock whose docs hold no code example.

rustdoc's `missing_doc_code_examples` lint sees nothing here, because every public item is
re-exported from a private module; this walks the public API from the crate root instead, in
rustdoc's JSON output (`scripts/doc-examples.sh` makes it): the re-exported types,
functions and constants, the inherent methods of the types, and the methods of public traits.
Enum variants, struct fields and trait impls are not counted. Prints one line per item
without an example and a total; exits 1 when there is any. Usage: doc-examples.py FILE.json"""
import json
import sys

KINDS = ("struct", "enum", "function", "constant", "trait", "type_alias", "static")


def main():
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    index = doc["index"]
    item = lambda i: index[str(i)]
    has_example = lambda it: "```" in (it.get("docs") or "")
    missing, counted = [], 0

    def check(path, it):
        nonlocal counted
        counted += 1
        if not has_example(it):
            missing.append(path)

    root = item(doc["root"])
    check("flock (crate)", root)
    for child in root["inner"]["module"]["items"]:
        it = item(child)
        if "use" in it["inner"]:
            name = it["inner"]["use"]["name"]
            it = item(it["inner"]["use"]["id"])
        else:
            name = it["name"]
        kind = next(iter(it["inner"]))
        if kind not in KINDS or it.get("visibility") != "public":
            continue
        check(name, it)
        if kind == "trait":
            for m in it["inner"]["trait"]["items"]:
                check(f"{name}::{item(m)['name']}", item(m))
        for impl_id in it["inner"].get(kind, {}).get("impls", []) or []:
            impl = item(impl_id)["inner"]["impl"]
            if impl["trait"] is not None or impl.get("is_synthetic") or impl.get("blanket_impl"):
                continue
            for m in impl["items"]:
                m = item(m)
                if m.get("visibility") == "public":
                    check(f"{name}::{m['name']}", m)
    for path in missing:
        print(f"no example: {path}")
    print(f"doc-examples: {counted - len(missing)} of {counted} public items have an example")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
