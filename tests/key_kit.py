"""What the key tests share: a page that keeps every keydown (its default prevented, so no
key moves the focus or reaches the browser's own shortcuts, ctrl+l or Tab), and the key
names with what a Chromium page's `keydown` reports for each."""

from __future__ import annotations

# Every keydown is kept and its default prevented, so no key moves the focus or reaches
# the browser's own shortcuts (ctrl+l, Tab) while the table is pressed.
KEYS_PAGE = """<!doctype html><html><body style="margin:0">
<input id="box" style="position:fixed;left:100px;top:100px;width:600px;height:40px">
<script>
window.keys = [];
window.quiet = false;
document.addEventListener('keydown', e => {
  window.keys.push([e.key, e.code, (e.shiftKey ? 'S' : '') + (e.ctrlKey ? 'C' : '') +
    (e.altKey ? 'A' : '') + (e.metaKey ? 'M' : '')]);
  if (!window.quiet) e.preventDefault();
}, true);
document.addEventListener('mousedown', e => {
  document.title = 'at:' + (e.screenX - e.clientX) + ',' + (e.screenY - e.clientY)}, {once: true});
document.getElementById('box').addEventListener('input', e => {
  document.title = 'value:' + e.target.value; });
</script></body></html>"""

# A name → the last keydown of its press: key, code, modifiers (S shift, C ctrl, A alt, M meta).
# Chromium on X gives the Meta key's own keydown no metaKey (Shift's and Control's carry
# theirs).
TABLE: list[tuple[str, tuple[str, str, str]]] = [
    ("meta", ("Meta", "MetaLeft", "")),
    ("super", ("Meta", "MetaLeft", "")),
    ("cmd", ("Meta", "MetaLeft", "")),
    ("win", ("Meta", "MetaLeft", "")),
    ("ArrowLeft", ("ArrowLeft", "ArrowLeft", "")),
    ("arrowright", ("ArrowRight", "ArrowRight", "")),
    ("ArrowUp", ("ArrowUp", "ArrowUp", "")),
    ("Down", ("ArrowDown", "ArrowDown", "")),
    ("PageDown", ("PageDown", "PageDown", "")),
    ("Page_Up", ("PageUp", "PageUp", "")),
    ("Enter", ("Enter", "Enter", "")),
    ("Return", ("Enter", "Enter", "")),
    ("KP_Enter", ("Enter", "NumpadEnter", "")),
    ("KP_1", ("1", "Numpad1", "")),
    ("KP_0", ("0", "Numpad0", "")),
    ("KP_Home", ("Home", "Numpad7", "")),
    ("Escape", ("Escape", "Escape", "")),
    ("ESC", ("Escape", "Escape", "")),
    ("Backspace", ("Backspace", "Backspace", "")),
    ("BackSpace", ("Backspace", "Backspace", "")),
    ("Tab", ("Tab", "Tab", "")),
    ("Space", (" ", "Space", "")),
    ("Delete", ("Delete", "Delete", "")),
    ("Home", ("Home", "Home", "")),
    ("End", ("End", "End", "")),
    ("F2", ("F2", "F2", "")),
    ("f9", ("F9", "F9", "")),
    ("ctrl+shift+s", ("S", "KeyS", "SC")),
    ("CTRL+L", ("l", "KeyL", "C")),
    ("alt+x", ("x", "KeyX", "A")),
    ("shift+Tab", ("Tab", "Tab", "S")),
    ("super+a", ("a", "KeyA", "M")),
    ("a", ("a", "KeyA", "")),
    ("A", ("A", "KeyA", "S")),
]
