"""The desktop's features on real local boxes: each does what it says (fonts that draw
CJK and emoji, a sound server a page plays to, a dock with the open windows, the classic X
programs), and a feature or app whose packages the host lacks is refused by name."""

from __future__ import annotations

import array
import uuid
from pathlib import Path

import pytest
from desktop_kit import act, launch, read_bytes, run, windows

from holm.adapters import features as features_module
from holm.adapters.base import AppInstaller, Desktop
from holm.adapters.features import FEATURE_PACKAGES
from holm.errors import Unsupported
from holm.wire import actions as a
from holm.wire import results as r
from holm.wire.spec import AppDefinition, DesktopSpec, Feature, Placement, Policy, Spec
from holm.wire.values import Point, Region

from .conftest import MakeRuntime

pytestmark = pytest.mark.desktop

REPO = Path(__file__).resolve().parents[2]
# Two texts of as many characters of each kind: drawn as glyphs they differ, drawn as
# "no such glyph" boxes they are the same row of boxes. (DejaVu, in every box, has a few
# emoji of its own, such as 😀: not these.)
JAPANESE = ("日本語のテキスト🎉🍣", "漢字とひらがなだ🚀🎉")
# The band of the screen the text is drawn in (below Chromium's toolbar).
TEXT_BAND = Region(x=0, y=300, width=1280, height=200)
DOCK_BAND = Region(x=0, y=770, width=1280, height=30)
TONE_PAGE = (
    "data:text/html,<button style='position:fixed;inset:0;width:100%;height:100%' "
    'onclick="const c=new AudioContext();const o=c.createOscillator();'
    "o.frequency.value=440;o.connect(c.destination);o.start();document.title='playing'\">"
    "play</button>"
)
# The page's title once its click handler ran (the click's event reaches the page after
# the click's answer).
PLAYING = a.Evaluate(
    what=a.EvaluateWhat(
        expression="new Promise(done => { const check = () => document.title === 'playing'"
        " ? done(document.title) : setTimeout(check, 20); check(); })",
        timeout_ms=10_000,
    )
)
# Three seconds of the sink, as 8 kHz mono 16-bit samples (parec flushes on SIGINT).
RECORD_SINK = (
    "timeout -s INT 3 parec -d holm.monitor --raw --format=s16le --rate=8000 --channels=1 "
    "> /tmp/sink.raw; test -s /tmp/sink.raw"
)


def new_id() -> str:
    return f"box_{uuid.uuid4().hex[:12]}"


def with_features(*features: Feature, apps: dict[str, AppDefinition] | None = None) -> Spec:
    return Spec(
        desktop=DesktopSpec(features=list(features)),
        policy=Policy(network=False),
        apps=apps or {},
    )


def text_page(text: str) -> str:
    return (
        "data:text/html;charset=utf-8,<body style='margin:0'>"
        f"<div style='position:fixed;top:250px;left:20px;font-size:72px'>{text}</div>"
    )


async def band_hash(desktop: Desktop, band: Region) -> str:
    return (await act(desktop, 0, a.Capture(what=a.CaptureWhat(region=band)), r.Captured)).hash


async def drawn(desktop: Desktop, text: str) -> str:
    """The hash of the text band once the page with `text` is drawn and still."""
    await act(desktop, 0, a.OpenUrl(url=text_page(text)), r.PageOpened)
    await act(desktop, 0, a.WaitStill(settle_ms=500), r.Stillness)
    return await band_hash(desktop, TEXT_BAND)


async def test_wide_fonts_draw_japanese_and_emoji_that_a_box_without_them_cannot(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime()
    wide, bare = new_id(), new_id()
    await runtime.create(wide, with_features("wide_fonts"), Placement())
    await runtime.create(bare, with_features(), Placement())
    wide_desktop, bare_desktop = await runtime.desktop(wide), await runtime.desktop(bare)

    japanese = await run(wide_desktop, "fc-list", ":lang=ja", "family")
    emoji = await run(wide_desktop, "fc-list", ":charset=1f389", "family")
    assert "Noto Sans CJK" in japanese.stdout and "Noto Color Emoji" in emoji.stdout
    assert (await run(bare_desktop, "fc-list", ":lang=ja", "family")).stdout.strip() == ""

    first, second = [await drawn(wide_desktop, text) for text in JAPANESE]
    bare_first, bare_second = [await drawn(bare_desktop, text) for text in JAPANESE]
    # Glyphs: two texts draw differently. Without the fonts both are the same boxes.
    assert first != second
    assert bare_first == bare_second
    assert first != bare_first


async def test_a_page_plays_to_the_boxs_sound_server_and_a_recording_of_it_is_not_silence(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime()
    box_id = new_id()
    await runtime.create(box_id, with_features("audio"), Placement())
    desktop = await runtime.desktop(box_id)

    await act(desktop, 0, a.OpenUrl(url=TONE_PAGE), r.PageOpened)
    assert (await run(desktop, "sh", "-c", RECORD_SINK, timeout_ms=10_000)).code == 0
    assert peak(await read_bytes(desktop, "/tmp/sink.raw")) == 0

    await act(desktop, 0, a.WaitStill(settle_ms=300), r.Stillness)
    await act(desktop, 0, a.Click(at=Point(x=640, y=450)), r.Pointed)
    assert (await act(desktop, 0, PLAYING, r.Evaluated)).value == "playing"
    assert (await run(desktop, "sh", "-c", RECORD_SINK, timeout_ms=10_000)).code == 0
    assert peak(await read_bytes(desktop, "/tmp/sink.raw")) > 1000


def peak(raw: bytes) -> int:
    samples = array.array("h", raw[: len(raw) // 2 * 2])
    assert len(samples) > 0, "the recording is empty"
    return max(abs(s) for s in samples)


# The panel of each display server: tint2 on X11, waybar's task list on Wayland (whose
# xterm shows through XWayland: `x11_apps`).
@pytest.mark.parametrize(
    ("server", "panel", "features"),
    [("x11", "tint2", ("dock",)), ("wayland", "waybar", ("dock", "x11_apps"))],
)
async def test_the_dock_shows_each_window_that_opens(
    make_runtime: MakeRuntime, server: str, panel: str, features: tuple[Feature, ...]
) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    spec = with_features(*features)
    spec.desktop.server = server  # type: ignore[assignment]
    await runtime.create(box_id, spec, Placement())
    desktop = await runtime.desktop(box_id)

    empty = await band_hash(desktop, DOCK_BAND)
    await launch(desktop, 0, "xterm", "-title", "first window")
    await act(desktop, 0, a.WaitStill(settle_ms=500), r.Stillness)
    one = await band_hash(desktop, DOCK_BAND)
    await launch(desktop, 0, "xterm", "-title", "second window")
    await act(desktop, 0, a.WaitStill(settle_ms=500), r.Stillness)
    two = await band_hash(desktop, DOCK_BAND)
    assert len({empty, one, two}) == 3
    assert (await run(desktop, "pgrep", "-x", panel)).code == 0
    # The panel is the desktop's, not a window an agent drives.
    titles = [w.title for w in await windows(desktop, 0)]
    assert sorted(titles) == ["first window", "second window"]


async def test_x11_apps_are_on_the_path_and_launch(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(chromium=False)
    box_id = new_id()
    eyes = {"eyes": AppDefinition(command=["xeyes"], window_class="xeyes")}
    await runtime.create(box_id, with_features("x11_apps", apps=eyes), Placement())
    desktop = await runtime.desktop(box_id)
    assert (await run(desktop, "sh", "-c", "command -v xeyes xclock xterm")).code == 0
    window = await launch(desktop, 0, "eyes")
    assert window.class_.lower() == "xeyes"


async def test_a_feature_or_an_app_the_host_lacks_is_refused_naming_its_package(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(chromium=False)
    lacking = "holm-no-such-package"
    monkeypatch.setitem(features_module.FEATURE_PACKAGES, "audio", ("pulseaudio", lacking))
    with pytest.raises(Unsupported, match=f"feature audio needs {lacking}.*apt-get install"):
        await runtime.create(new_id(), with_features("audio"), Placement())
    own = {"tool": AppDefinition(command=["tool"], packages=[lacking])}
    with pytest.raises(Unsupported, match=f"app tool needs {lacking}"):
        await runtime.create(new_id(), with_features(apps=own), Placement())
    assert await runtime.list() == []


async def test_apps_go_into_a_local_box_only_when_the_host_has_them(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(chromium=False)
    assert isinstance(runtime, AppInstaller)
    box_id = new_id()
    await runtime.create(box_id, with_features(), Placement())
    await runtime.install_apps(box_id, {"mousepad": ["mousepad"]})
    with pytest.raises(Unsupported, match="app thing needs holm-no-such-package"):
        await runtime.install_apps(box_id, {"thing": ["holm-no-such-package"]})
    window = await launch(await runtime.desktop(box_id), 0, "mousepad")
    assert window.class_.lower() == "mousepad"


def test_setup_installs_every_features_packages() -> None:
    setup = (REPO / "scripts/setup").read_text().split()
    missing = [p for packages in FEATURE_PACKAGES.values() for p in packages if p not in setup]
    assert missing == []
