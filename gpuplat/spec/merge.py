"""Overlay merge: `stacks/<env>.yaml` on top of `platform/platform.yaml`.

Rules:
- mappings merge deeply;
- lists of objects with `name` merge item by item: an overlay item with a known name merges
  into that item, `remove: true` drops the item, and an item marked `new: true` is appended.
  An unmarked name the base does not define is an error (GP015) with the closest base name:
  a misspelt tenant would otherwise become a new, protected namespace, and a misspelt pool a
  new pool with no instance type;
- `null` in an overlay deletes the key (the only way to drop a mapping key, e.g. `procurement`);
- every other value replaces.
Each merged value keeps the position of the file that supplied it, so a diagnostic about a
value set in the overlay points into the overlay.
"""

from __future__ import annotations

import difflib
from typing import Any, cast

from gpuplat.diagnostics import Diagnostic, Level, json_path
from gpuplat.spec.loader import SourceDoc
from gpuplat.spec.positions import Path, Pos


def _is_named_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, dict) and isinstance(cast("dict[str, Any]", item).get("name"), str)
        for item in cast("list[Any]", value)
    )


class _Merger:
    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, code: str, message: str, path: Path, pos: Pos) -> None:
        origin = pos.value
        self.diagnostics.append(Diagnostic(code, Level.ERROR, message, json_path(path), *_o(origin)))

    def merge(self, base: Any, base_pos: Pos, over: Any, over_pos: Pos, path: Path) -> tuple[Any, Pos]:
        over_value: Any = over
        if isinstance(base, dict) and isinstance(over, dict):
            return self._merge_maps(
                cast("dict[str, Any]", base), base_pos, cast("dict[str, Any]", over), over_pos, path
            )
        if isinstance(over, list) and (base is None or _is_named_list(base)):
            over_list = cast("list[Any]", over)
            has_objects = any(isinstance(item, dict) for item in over_list)
            has_removes = any(isinstance(item, dict) and "remove" in item for item in over_list)
            if has_removes or (base is not None and has_objects):
                base_list: list[Any] = cast("list[Any]", base) if base is not None else []
                return self._merge_named(base_list, base_pos, over_list, over_pos, path)
        return over_value, over_pos

    def _merge_maps(
        self, base: dict[str, Any], base_pos: Pos, over: dict[str, Any], over_pos: Pos, path: Path
    ) -> tuple[dict[str, Any], Pos]:
        out = dict(base)
        pos = Pos(base_pos.value, base_pos.key, dict(base_pos.children))
        for key, value in over.items():
            child_over = over_pos.children[key]
            if value is None:
                if key in out:
                    # Deliberate (`procurement: null`) or an empty key left by bad indentation:
                    # either way the user should see that a whole section went away.
                    self.diagnostics.append(
                        Diagnostic(
                            "GP013",
                            Level.WARNING,
                            f"the overlay sets {key!r} to null, which deletes it from the base",
                            json_path((*path, key)),
                            *_o(child_over.key or child_over.value),
                        )
                    )
                out.pop(key, None)
                pos.children.pop(key, None)
                continue
            merged, merged_pos = self.merge(
                base.get(key), base_pos.children.get(key, child_over), value, child_over, (*path, key)
            )
            merged_pos.key = child_over.key
            out[key] = merged
            pos.children[key] = merged_pos
        return out, pos

    def _markers_ok(
        self, label: str, markers: tuple[Any, Any], known: bool, base: list[Any], where: tuple[Path, Pos]
    ) -> bool:
        """`remove` and `new` say what an overlay item is meant to do; one that cannot be done is an
        error at the item, so a slip in a name never changes the platform silently."""
        (remove, new), (item_path, item_pos) = markers, where
        for key, value in (("remove", remove), ("new", new)):
            if value is not True and value is not False:
                self.error(
                    "GP012", f"`{key}` must be true or false", (*item_path, key), item_pos.children.get(key, item_pos)
                )
                return False
        if remove and new:
            self.error("GP012", f"{label!r} is marked both `remove` and `new`", item_path, item_pos)
            return False
        if remove and not known:
            self.error(
                "GP010",
                f"`remove: true` names {label!r}, which the base does not define{_hint(label, base)}",
                item_path,
                item_pos,
            )
            return False
        if new and known:
            self.error(
                "GP016",
                f"{label!r} is marked `new: true`, but the base already defines it (drop `new` to change it)",
                (*item_path, "new"),
                item_pos.children.get("new", item_pos),
            )
            return False
        if not new and not remove and not known and base:
            self.error(
                "GP015",
                f"{label!r} matches no item of the base's {_list_name(item_path)}{_hint(label, base)}; "
                "to add it in this overlay, mark it `new: true`",
                (*item_path, "name"),
                item_pos.children.get("name", item_pos),
            )
            return False
        return True

    def _merge_named(
        self, base: list[Any], base_pos: Pos, over: list[Any], over_pos: Pos, path: Path
    ) -> tuple[list[Any], Pos]:
        items: list[tuple[Any, Pos]] = [(item, base_pos.children[i]) for i, item in enumerate(base)]
        index = {cast("dict[str, Any]", item)["name"]: i for i, (item, _) in enumerate(items)}
        seen: set[str] = set()
        for i, raw in enumerate(over):
            item_pos = over_pos.children[i]
            item_path = (*path, i)
            if not isinstance(raw, dict) or not isinstance(cast("dict[str, Any]", raw).get("name"), str):
                self.error("GP011", "an overlay list item needs a `name` to be merged by name", item_path, item_pos)
                continue
            item = dict(cast("dict[str, Any]", raw))
            name: str = item["name"]
            if name in seen:
                # Two entries for one name would merge silently, the later winning: almost
                # always a copy-paste slip, and the base file rejects the same (GP200).
                self.error(
                    "GP014",
                    f"{name!r} appears twice in this overlay list",
                    (*item_path, "name"),
                    item_pos.children.get("name", item_pos),
                )
                continue
            seen.add(name)
            remove = item.pop("remove", False)
            new = item.pop("new", False)
            stripped_pos = Pos(item_pos.value, item_pos.key, dict(item_pos.children))
            stripped_pos.children.pop("remove", None)
            stripped_pos.children.pop("new", None)
            if not self._markers_ok(name, (remove, new), name in index, base, (item_path, item_pos)):
                continue
            if remove is True:
                items[index[name]] = (None, item_pos)
                continue
            if name in index and items[index[name]][0] is not None:
                j = index[name]
                merged, merged_pos = self.merge(items[j][0], items[j][1], item, stripped_pos, item_path)
                items[j] = (merged, merged_pos)
            else:
                index[name] = len(items)
                items.append((item, stripped_pos))
        kept = [(item, p) for item, p in items if item is not None]
        pos = Pos(over_pos.value, over_pos.key, {i: p for i, (_, p) in enumerate(kept)})
        return [item for item, _ in kept], pos


def _list_name(item_path: Path) -> str:
    return str(item_path[-2]) if len(item_path) >= 2 else "list"


def _hint(name: str, base: list[Any]) -> str:
    names = [str(cast("dict[str, Any]", item)["name"]) for item in base if isinstance(item, dict)]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else f" (the base has: {', '.join(names)})" if names else ""


def _o(origin: Any) -> tuple[str, int, int]:
    return origin.file, origin.line, origin.col


def merge_overlay(base: SourceDoc, overlay: SourceDoc | None) -> tuple[Any, Pos, list[Diagnostic]]:
    """Merged data, its position tree and the merge's own diagnostics (always inside the overlay)."""
    if overlay is None:
        return base.data, base.pos, []
    merger = _Merger()
    data, pos = merger.merge(base.data, base.pos, overlay.data, overlay.pos, ())
    return data, pos, merger.diagnostics
