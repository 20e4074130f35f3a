"""Hosted backends against local stand-ins on 127.0.0.1.

The real services (Hugging Face inference providers, Spaces, OpenAI-compatible
APIs) cannot be reached from this machine, so each test points the backend at a
server on the loopback interface that speaks the same protocol: a small HTTP
server answering like the HF inference API and an OpenAI-compatible
``/v1/chat/completions``, and a tiny Gradio app launched locally for the
``gradio_client`` path. The clients are the real ones (``InferenceClient``,
``gradio_client.Client``); only the address differs, through their own
``base_url`` / URL-as-model / URL-as-Space injection points. The HTTP stand-in
lives in ``hosted_server.py``, shared with the LLM judge tests.
"""

from __future__ import annotations

import socket
import sys
import time
from types import MappingProxyType

import pytest
from conftest import launch_on_free_port
from hosted_server import SLOW_SECONDS, TONE_RATE, allow_loopback, serving, tone

from arena_core.backends import BackendError, BackendTimeout, BackendUnavailable, make_backend
from arena_core.backends.hosted import fill_arguments, translate_error
from arena_core.registry import BackendSpec, Model

TOKEN = "hf_test_token"
#: A timeout short enough to keep tests fast and far below SLOW_SECONDS.
SHORT_TIMEOUT = 0.5
TIMEOUT = 20.0
#: Gradio's own queue code trips pandas 3 deprecation warnings; not ours to fix.
GRADIO_WARNINGS = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")


def model(backend_type: str, **options) -> Model:
    return Model(
        id="hosted/model",
        name="hosted",
        backend=BackendSpec(backend_type, MappingProxyType(options)),
    )


@pytest.fixture(autouse=True)
def _hub_online_for_loopback(monkeypatch):
    allow_loopback(monkeypatch)


@pytest.fixture
def server():
    with serving() as srv:
        yield srv


def hf(modality: str, base_url: str, **options):
    block = {"model": "org/some-model", "base_url": base_url, **options}
    return make_backend(model("hf-inference", **block), modality, env={"HF_TOKEN": TOKEN})


# -- Hugging Face InferenceClient ------------------------------------------------------------


def test_text_to_speech_posts_the_prompt_with_the_token_and_decodes_wav(server):
    output = hf("audio", f"{server.url}/tts").generate("Hello there.", TIMEOUT)
    assert output.sample_rate == TONE_RATE
    assert output.duration == pytest.approx(1.0)
    [request] = server.requests
    assert request["path"] == "/tts"
    assert request["json"]["inputs"] == "Hello there."
    assert request["headers"]["authorization"] == f"Bearer {TOKEN}"


def test_chat_completion_sends_system_and_user_messages_and_the_model(server):
    backend = hf("text", server.url, system="Answer briefly.", max_tokens=64)
    output = backend.generate("What is the capital of France?", TIMEOUT)
    assert output.text == "Paris is the capital of France."
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"]["model"] == "org/some-model"
    assert request["json"]["max_tokens"] == 64
    assert request["json"]["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is the capital of France?"},
    ]


def test_text_to_image_returns_the_image_as_png(server):
    output = hf("image", f"{server.url}/image", parameters={"width": 512}).generate(
        "A red square", TIMEOUT
    )
    assert output.image_format == "png"
    assert output.image_bytes.startswith(b"\x89PNG")
    [request] = server.requests
    assert request["json"] == {"inputs": "A red square", "parameters": {"width": 512}}
    assert request["headers"]["accept"] == "image/png"


def test_http_error_becomes_a_backend_error_naming_model_and_status(server):
    with pytest.raises(BackendError) as info:
        hf("audio", f"{server.url}/overloaded").generate("Hello", TIMEOUT)
    assert str(info.value) == "hosted/model: HTTP 503 from the service"


def test_slow_service_times_out(server):
    with pytest.raises(BackendTimeout, match=r"hosted/model: no answer within 0\.5 s"):
        hf("audio", f"{server.url}/slow").generate("Hello", SHORT_TIMEOUT)


def test_unreachable_service_is_reported_unavailable():
    # A port bound but not listened on: refused, and held so no other server can take it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        backend = hf("audio", f"http://127.0.0.1:{sock.getsockname()[1]}/tts")
        with pytest.raises(BackendUnavailable, match="cannot reach the service"):
            backend.generate("Hello", TIMEOUT)


def test_an_answer_that_is_not_audio_is_a_clear_error(server):
    with pytest.raises(BackendError, match=r"unusable answer.*not audio"):
        hf("audio", f"{server.url}/html").generate("Hello", TIMEOUT)


@pytest.mark.parametrize("route", ["flac", "mp3"])
def test_compressed_audio_is_decoded_with_soundfile(server, route):
    pytest.importorskip("soundfile", reason="soundfile not installed (optional, for FLAC/MP3)")
    output = hf("audio", f"{server.url}/{route}").generate("Hello", TIMEOUT)
    assert output.sample_rate == TONE_RATE
    assert output.duration == pytest.approx(1.0, abs=0.1)


def test_compressed_audio_without_soundfile_says_what_to_install(server, monkeypatch):
    monkeypatch.setitem(sys.modules, "soundfile", None)  # makes `import soundfile` fail
    with pytest.raises(BackendError, match="FLAC audio; decoding it needs 'pip install soundfile'"):
        hf("audio", f"{server.url}/flac").generate("Hello", TIMEOUT)


# -- OpenAI-compatible -----------------------------------------------------------------------


def test_openai_compatible_posts_chat_completions_with_the_named_key(server):
    backend = make_backend(
        model(
            "openai-compatible",
            base_url=f"{server.url}/v1",
            model="served-model",
            key_env="MY_API_KEY",
            parameters={"temperature": 0.2},
        ),
        "text",
        env={"MY_API_KEY": "sk-test", "HF_TOKEN": TOKEN},
    )
    assert backend.generate("Capital of France?", TIMEOUT).text.startswith("Paris")
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert request["json"]["model"] == "served-model"
    assert request["json"]["temperature"] == 0.2
    assert request["json"]["messages"] == [{"role": "user", "content": "Capital of France?"}]


def test_a_key_pasted_with_its_newline_is_sent_without_it(server):
    """A secret pasted with its trailing newline (a Space secret, a ``.env`` line) kept it:
    every call failed authentication and the model stayed paused; a blank one is unset."""
    options = {"base_url": f"{server.url}/v1", "model": "m", "key_env": "MY_API_KEY"}
    backend = make_backend(model("openai-compatible", **options), "text",
                           env={"MY_API_KEY": " sk-test\n"})  # fmt: skip
    backend.generate("Capital of France?", TIMEOUT)
    assert server.requests[-1]["headers"]["authorization"] == "Bearer sk-test"
    blank = make_backend(model("openai-compatible", **options), "text", env={"MY_API_KEY": "\n"})
    assert blank.availability().reason == "MY_API_KEY not set"


# -- availability ----------------------------------------------------------------------------


def test_missing_tokens_make_hosted_models_unavailable_without_any_request(server):
    cases = [
        ("hf-inference", {"model": "org/m", "base_url": server.url}, "HF_TOKEN not set"),
        ("hf-inference", {"model": "org/m", "token_env": "OTHER_TOKEN"}, "OTHER_TOKEN not set"),
        ("openai-compatible", {"base_url": server.url, "model": "m", "key_env": "K"}, "K not set"),
        ("gradio-space", {"space": "owner/space", "api_name": "/predict"}, "HF_TOKEN not set"),
    ]
    for backend_type, options, reason in cases:
        backend = make_backend(model(backend_type, **options), "text", env={})
        assert not backend.availability().ok
        assert backend.availability().reason == reason
    assert server.requests == []


def test_hub_offline_mode_makes_hub_clients_unavailable():
    offline = {"HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1"}
    hub = make_backend(model("hf-inference", model="org/m"), "text", env=offline)
    assert hub.availability().reason == "HF_HUB_OFFLINE is set"
    by_url = make_backend(
        model("gradio-space", space="http://127.0.0.1:1/", api_name="/p"), "text", env=offline
    )
    assert by_url.availability().ok  # gradio_client reaches an app URL without the Hub


def test_token_present_makes_hosted_models_available_without_any_request(server):
    backend = make_backend(model("hf-inference", model="org/m"), "image", env={"HF_TOKEN": TOKEN})
    assert backend.availability().ok
    assert "org/m" in backend.version
    assert TOKEN not in backend.version
    assert server.requests == []


# -- gradio_client against a local Gradio app ------------------------------------------------


@pytest.fixture(scope="module")
def gradio_app():
    """A tiny Gradio app with the endpoints a TTS or chat Space would have."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    gr = pytest.importorskip("gradio")

    def speak(text, speed):
        return TONE_RATE, tone(seconds=0.5 * speed)

    def echo(text):
        return f"echo: {text}"

    def fail(text):
        raise gr.Error("the model crashed")

    def slow(text):
        time.sleep(SLOW_SECONDS)
        return text

    with gr.Blocks() as demo:
        text, speed = gr.Textbox(), gr.Number(value=1.0)
        audio, answer = gr.Audio(type="numpy"), gr.Textbox()
        button = gr.Button()
        button.click(speak, [text, speed], audio, api_name="speak")
        button.click(echo, text, answer, api_name="echo")
        button.click(fail, text, answer, api_name="fail")
        button.click(slow, text, answer, api_name="slow")
    yield launch_on_free_port(demo)
    demo.close()
    monkeypatch.undo()


def space(url: str, modality: str, api_name: str, **options):
    block = {"space": url, "api_name": api_name, **options}
    return make_backend(model("gradio-space", **block), modality, env={"HF_TOKEN": TOKEN})


@GRADIO_WARNINGS
def test_gradio_space_audio_endpoint_with_keyword_arguments(gradio_app):
    backend = space(gradio_app, "audio", "/speak", args={"text": "{text}", "speed": 2.0})
    output = backend.generate("Hello", TIMEOUT)
    assert output.sample_rate == TONE_RATE
    assert output.duration == pytest.approx(1.0, rel=0.01)


@GRADIO_WARNINGS
def test_gradio_space_text_endpoint_with_default_positional_argument(gradio_app):
    assert space(gradio_app, "text", "/echo").generate("Hi", TIMEOUT).text == "echo: Hi"


@GRADIO_WARNINGS
def test_gradio_space_error_is_reported(gradio_app):
    with pytest.raises(BackendError, match="the Space reported an error: the model crashed"):
        space(gradio_app, "text", "/fail").generate("Hi", TIMEOUT)


@GRADIO_WARNINGS
def test_gradio_space_timeout(gradio_app):
    with pytest.raises(BackendTimeout, match="no answer within"):
        space(gradio_app, "text", "/slow").generate("Hi", SHORT_TIMEOUT * 2)


# -- pure helpers ----------------------------------------------------------------------------


def test_fill_arguments_replaces_the_placeholder_only_in_strings():
    assert fill_arguments(None, "hi") == (["hi"], {})
    assert fill_arguments(["{text}", 3], "hi") == (["hi", 3], {})
    assert fill_arguments({"prompt": "Say: {text}", "n": 1}, "hi") == (
        [],
        {"prompt": "Say: hi", "n": 1},
    )


def test_translate_error_maps_library_errors_by_shape():
    class Response:
        status_code = 429

    class HTTPStatusError(Exception):
        response = Response()

    class ConnectError(Exception):
        pass

    assert str(translate_error("m", HTTPStatusError("x"), 1)) == "m: HTTP 429 from the service"
    assert isinstance(translate_error("m", ConnectError("refused"), 1), BackendUnavailable)
    assert isinstance(translate_error("m", TimeoutError(), 1), BackendTimeout)
    assert str(translate_error("m", ValueError("bad"), 1)) == "m: ValueError: bad"
