"""Channel specs from dicts and TOML, and the errors bad ones give (naming the field)."""
from __future__ import annotations

import pytest

from omdp.transport import ChannelSpecError, load_spec, open_receiver, open_sender
from omdp.transport.api import MessageTooLargeError
from omdp.transport.spec import ChannelSpec


def test_dict_and_toml_forms(tmp_path) -> None:
    want = ChannelSpec(transport="tcp", queue_size=32, max_message=256, mutex=False, wait="spin-yield")
    assert load_spec({"transport": "tcp", "queue_size": 32, "max_message": 256, "mutex": False,
                      "wait": "spin-yield"}) == want
    text = 'transport = "tcp"\nqueue_size = 32\nmax_message = 256\nmutex = false\nwait = "spin-yield"\n'
    assert load_spec(text) == want
    assert load_spec("[channel]\n" + text) == want
    path = tmp_path / "edge.toml"
    path.write_text(text)
    assert load_spec(path) == want
    assert load_spec(str(path)) == want
    assert load_spec({}) == ChannelSpec()


@pytest.mark.parametrize(
    "bad,field",
    [
        ({"transport": "carrier-pigeon"}, "transport"),
        ({"queue_size": 100}, "queue_size"),
        ({"queue_size": 1}, "queue_size"),
        ({"max_message": 4}, "max_message"),
        ({"wait": "sleep"}, "wait"),
        ({"on_full": "explode"}, "on_full"),
        ({"queue_sise": 8}, "queue_sise"),
    ],
)
def test_bad_specs_name_the_field(bad: dict, field: str) -> None:
    with pytest.raises(ChannelSpecError, match=f"channel spec: {field}"):
        load_spec(bad)


def test_queue_size_error_says_power_of_two() -> None:
    with pytest.raises(ChannelSpecError, match="power of two, got 100"):
        load_spec({"queue_size": 100})


def test_bad_toml_is_a_spec_error() -> None:
    with pytest.raises(ChannelSpecError, match="not valid TOML"):
        load_spec("queue_size = = 3")


def test_message_over_max_message_names_the_field() -> None:
    spec = {"transport": "fused", "queue_size": 4, "max_message": 64}
    rx = open_receiver(spec, "spec-test")
    tx = open_sender(spec, "spec-test")
    with pytest.raises(MessageTooLargeError, match="max_message=64"):
        tx.put(b"x" * 65)
    tx.close()
    rx.close()


def test_bad_endpoints() -> None:
    with pytest.raises(ValueError, match="omdp-<run>-<channel>"):
        open_receiver({"transport": "vega-shm"}, "no-prefix")
    with pytest.raises(ValueError, match="host:port"):
        open_receiver({"transport": "tcp"}, "localhost")


def test_mirrored_media_check_their_endpoints() -> None:
    with pytest.raises(ValueError, match="vega-ib endpoint 'x'"):
        open_receiver({"transport": "vega-ib"}, "x")
    with pytest.raises(ValueError, match="tcp endpoint 'x'"):
        open_receiver({"transport": "vega-tcp"}, "x")
