"""The image key (the tag): one image per image source, added packages and architecture;
nothing else of a spec changes it."""

from __future__ import annotations

import msgspec

from holm.adapters.docker.dockerfile import render
from holm.adapters.docker.images import image_key, image_ref, image_source, spec_dockerfile
from holm.adapters.features import FEATURE_PACKAGES
from holm.wire.spec import AppDefinition, DesktopSpec, Policy, Spec, default_features

ARCH = "amd64"


def test_the_same_spec_gives_the_same_key() -> None:
    spec = Spec(desktop=DesktopSpec(packages=["jq", "curl"]))
    assert image_key(spec, image_source(), ARCH) == image_key(spec, image_source(), ARCH)


def test_the_default_features_and_the_same_features_by_name_are_one_image() -> None:
    source = image_source()
    named = Spec(desktop=DesktopSpec(features=list(reversed(default_features("x11")))))
    assert image_key(Spec(), source, ARCH) == image_key(named, source, ARCH)


def test_package_order_and_repeats_do_not_make_a_new_image() -> None:
    source = image_source()
    one = Spec(desktop=DesktopSpec(packages=["jq", "curl"]))
    other = Spec(desktop=DesktopSpec(packages=["curl", "jq", "curl"]))
    assert image_key(one, source, ARCH) == image_key(other, source, ARCH)


def test_what_the_container_is_given_does_not_make_a_new_image() -> None:
    source = image_source()
    other = Spec(
        desktop=DesktopSpec(width=800, height=600, screens=3), policy=Policy(network=False)
    )
    assert image_key(Spec(), source, ARCH) == image_key(other, source, ARCH)


def test_added_packages_make_a_new_image() -> None:
    source = image_source()
    keys = {
        image_key(Spec(), source, ARCH),
        image_key(Spec(desktop=DesktopSpec(packages=["jq"])), source, ARCH),
        image_key(Spec(desktop=DesktopSpec(packages=["jq", "curl"])), source, ARCH),
        image_key(Spec(desktop=DesktopSpec(features=[])), source, ARCH),
        image_key(Spec(desktop=DesktopSpec(features=["audio"])), source, ARCH),
    }
    assert len(keys) == 5


def test_the_architecture_makes_a_new_image() -> None:
    source = image_source()
    assert image_key(Spec(), source, "amd64") != image_key(Spec(), source, "arm64")


def test_each_part_of_the_image_source_makes_a_new_image() -> None:
    source = image_source()
    (first_path, _), *rest = source.agent_files
    changed = [
        msgspec.structs.replace(source, template=source.template + "RUN true\n"),
        msgspec.structs.replace(source, base_image="debian:trixie-slim"),
        msgspec.structs.replace(source, agent_files=((first_path, "0" * 64), *rest)),
        msgspec.structs.replace(source, python_libraries=(*source.python_libraries, "six==9.9")),
        msgspec.structs.replace(source, python_version="3.12"),
    ]
    keys = {image_key(Spec(), s, ARCH) for s in changed}
    assert image_key(Spec(), source, ARCH) not in keys
    assert len(keys) == len(changed)


def test_the_source_holds_the_agent_code_and_its_libraries() -> None:
    source = image_source()
    paths = [path for path, _ in source.agent_files]
    assert "wire/agent_protocol.py" in paths
    assert "wire/actions.py" in paths
    # The server's code is not in a box's image, nor the wire types only the server reads
    # (REST bodies, trace entries): a change to them builds no new image.
    server_side = ("http/", "engine", "adapters/docker/", "adapters/base.py")
    assert not any(path.startswith(server_side) for path in paths)
    assert not {"wire/api.py", "wire/entries.py", "wire/feed.py"} & set(paths)
    names = {lib.split("==")[0].lower() for lib in source.python_libraries}
    assert {"msgspec", "pillow", "python-xlib", "six"} <= names
    # The agent reaches DevTools with the standard library (devtools_wire.py).
    assert "aiohttp" not in names


def test_the_tag_names_the_key() -> None:
    key = image_key(Spec(), image_source(), ARCH)
    assert image_ref(key) == f"holm-box:{key}"
    assert len(key) == 32 and int(key, 16) >= 0


def test_each_feature_installs_its_packages_and_no_other() -> None:
    bare = render([], [], "3.11")
    for feature, packages in FEATURE_PACKAGES.items():
        text = render([feature], [], "3.11")
        for package in packages:
            assert package in text and package not in bare
    with_jq = render([], ["jq"], "3.11")
    assert " jq" in with_jq and " jq" not in bare


def test_a_specs_catalog_apps_put_their_packages_in_the_image_and_only_theirs() -> None:
    source = image_source()
    bare = Spec(desktop=DesktopSpec(features=[]))
    with_mousepad = Spec(desktop=DesktopSpec(features=[]), apps={"mousepad": AppDefinition()})
    assert " mousepad" not in spec_dockerfile(bare, source)
    assert " mousepad" in spec_dockerfile(with_mousepad, source)
    assert image_key(bare, source, ARCH) != image_key(with_mousepad, source, ARCH)
    own = Spec(apps={"tool": AppDefinition(command=["tool"], packages=["jq"])})
    assert " jq" in spec_dockerfile(own, source)


def test_a_wayland_image_is_its_own_and_holds_the_compositor_and_pywayland() -> None:
    source = image_source()
    wayland = Spec(desktop=DesktopSpec(server="wayland"))
    assert image_key(wayland, source, ARCH) != image_key(Spec(), source, ARCH)
    text = spec_dockerfile(wayland, source)
    assert " sway waybar wayvnc wl-clipboard xwayland " in text
    assert "pywayland.protocol.wlr_screencopy_unstable_v1" in text
    x11 = spec_dockerfile(Spec(), source)
    assert "sway" not in x11 and "pywayland" not in x11
    # The two share their first and largest layer: the desktop packages' step.
    assert x11.split("\nRUN ")[1] == text.split("\nRUN ")[1]


def test_what_only_a_wayland_image_holds_makes_no_new_x11_image() -> None:
    source = image_source()
    assert any(lib.startswith("pywayland==") for lib in source.wayland_libraries)
    assert source.wayland_protocols, "scripts/build-wayland-protocols made no bindings"
    other = msgspec.structs.replace(source, wayland_protocols=(("x.py", "0" * 64),))
    assert image_key(Spec(), other, ARCH) == image_key(Spec(), source, ARCH)
    wayland = Spec(desktop=DesktopSpec(server="wayland"))
    assert image_key(wayland, other, ARCH) != image_key(wayland, source, ARCH)
