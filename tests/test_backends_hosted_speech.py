"""The hosted speech models of the default registry, against local stand-ins of their services.

The real services (the Hub's model API, the Inference Providers router in front
of Replicate, the public Spaces) cannot be reached from this machine. Each test
builds the backend from the shipped ``registry.yaml`` entry and points the real
client at a server on 127.0.0.1 that answers the way the documented API does:

* Inference Providers: ``huggingface_hub`` first reads the model's provider
  mapping from the Hub (``GET /api/models/<id>?expand=inferenceProviderMapping``),
  then posts to ``<router>/replicate/v1/...predictions`` with ``Prefer: wait`` and
  ``{"input": {"text": ..., <parameters>}}``; the prediction's ``output`` is a URL
  the client downloads. The Hub and router addresses are the library's own
  constants, patched to the stand-in (the provider id is the stand-in's, not
  Replicate's real one, which is not known here).
* Spaces: a local Gradio app with the endpoint names and parameters the
  registry calls (as the TTS Arena's configuration documents them), reached by
  URL instead of by Space id.

Then the start-up check of ``build_service`` runs against the stand-ins: a model
whose service fails is paused with the reason, the others stay available.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

import numpy as np
import pytest
import yaml

from arena_core.backends import make_backend
from arena_core.backends.audio import encode_wav
from arena_core.registry import load_registry
from arena_core.space.config import Settings
from arena_core.space.startup import build_service

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hf_test_token"
TIMEOUT = 20.0
RATE = 24_000
#: The stand-in's Replicate version id of each model (Replicate's real ones are not known here).
STANDIN_PROVIDER_IDS = {
    "hexgrad/Kokoro-82M": "standin/kokoro-82m:0123456789abcdef",
    "OuteAI/OuteTTS-0.3-500M": "standin/outetts-0.3-500m",
}
GRADIO_WARNINGS = pytest.mark.filterwarnings("ignore:.*(no_silent_downcasting|copy keyword)")


def tone(seconds: float) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (np.sin(2 * np.pi * 180 * t) * 9000).astype(np.int16)


class ProviderStandIn(ThreadingHTTPServer):
    """The Hub's model API, the router's Replicate route and the file host, on one port."""

    daemon_threads = True
    block_on_close = False

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _ProviderHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.requests: list[dict] = []


class _ProviderHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _json(self, status: int, payload) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        self.server.requests.append({"method": "GET", "path": url.path, "query": url.query})
        if url.path.startswith("/api/models/"):
            model_id = url.path.removeprefix("/api/models/")
            mapping = {"replicate": {"providerId": STANDIN_PROVIDER_IDS[model_id],
                                     "status": "live", "task": "text-to-speech"}}  # fmt: skip
            self._json(200, {"id": model_id, "inferenceProviderMapping": mapping})
        elif url.path == "/files/speech.wav":
            wav = encode_wav(RATE, tone(1.5))
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(wav)))
            self.end_headers()
            self.wfile.write(wav)
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.requests.append({"method": "POST", "path": self.path, "json": body,
                                     "headers": headers})  # fmt: skip
        if self.path.startswith("/replicate/v1/"):
            output = f"{self.server.url}/files/speech.wav"
            self._json(201, {"id": "p1", "status": "succeeded", "output": output})
        elif self.path.startswith("/failing"):
            self._json(503, {"error": "Service Unavailable"})
        else:
            self._json(404, {"error": "not found"})


@pytest.fixture
def provider(monkeypatch):
    """The stand-in, with huggingface_hub pointed at it (its Hub and router constants)."""
    import huggingface_hub.constants
    from huggingface_hub.inference._providers import _common

    server = ProviderStandIn()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    # CI sets HF_HUB_OFFLINE=1, which the library reads once at import; the stand-in is local.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", server.url)
    monkeypatch.setattr(huggingface_hub.constants, "INFERENCE_PROXY_TEMPLATE",
                        server.url + "/{provider}")  # fmt: skip
    _common._fetch_inference_provider_mapping.cache_clear()  # mappings are cached per process
    yield server
    _common._fetch_inference_provider_mapping.cache_clear()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def registry():
    return load_registry(ROOT / "registry.yaml")


def registry_model(registry, model_id: str):
    return registry.arena("tts-en").model(model_id)


@pytest.mark.parametrize(
    ("model_id", "route", "extra_input"),
    [
        ("hexgrad/Kokoro-82M:af_nicole@replicate", "/replicate/v1/predictions",
         {"voice": "af_nicole"}),
        ("OuteAI/OuteTTS-0.3-500M@replicate",
         "/replicate/v1/models/standin/outetts-0.3-500m/predictions", {}),
    ],
)  # fmt: skip
def test_inference_provider_models_call_replicate_through_the_router(
    provider, registry, model_id, route, extra_input
):
    model = registry_model(registry, model_id)
    backend = make_backend(model, "audio", env={"HF_TOKEN": TOKEN})
    assert backend.remote and backend.availability().ok
    output = backend.generate("Hello there.", TIMEOUT)
    assert output.sample_rate == RATE
    assert output.duration == pytest.approx(1.5)
    mapping, prediction, download = provider.requests
    assert mapping["path"] == f"/api/models/{model.backend.options['model']}"
    assert "inferenceProviderMapping" in mapping["query"]
    assert prediction["path"] == route
    assert prediction["json"]["input"] == {"text": "Hello there.", **extra_input}
    assert prediction["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert prediction["headers"]["prefer"] == "wait"
    assert download["path"] == "/files/speech.wav"


def test_hosted_speech_models_need_a_token_and_call_nothing_without_one(provider, registry):
    for model in registry.arena("tts-en").models:
        backend = make_backend(model, "audio", env={})
        if backend.remote:
            assert backend.availability().reason == "HF_TOKEN not set"
    assert provider.requests == []


# -- public Spaces through gradio_client, against a local Gradio app -------------------------


@pytest.fixture(scope="module")
def spaces():
    """Local apps with the two Spaces' endpoints; records the arguments each received."""
    gr = pytest.importorskip("gradio")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    calls: list[tuple] = []

    def generate_speech(text, mode, preset_voice, clone_audio_path):
        calls.append(("pocket", text, mode, preset_voice, clone_audio_path))
        return RATE, tone(1.0)

    def generate_orpheus(text, voice, temperature, top_p, repetition_penalty, max_new_tokens):
        calls.append(("orpheus", text, voice, temperature, top_p, repetition_penalty,
                      max_new_tokens))  # fmt: skip
        return RATE, tone(2.0)

    with gr.Blocks() as demo:
        text = gr.Textbox()
        mode = gr.Radio(["Default Voices", "Voice Clone"], value="Default Voices")
        voice, clone = gr.Dropdown(["alba", "azelma"], value="alba"), gr.Audio(type="filepath")
        out = gr.Audio(type="numpy")
        button = gr.Button()
        button.click(generate_speech, [text, mode, voice, clone], out, api_name="generate_speech")
    with gr.Blocks() as orpheus:  # a second app: both Spaces name their endpoint /generate_speech
        speaker = gr.Dropdown(["tara", "leah", "leo"], value="tara")
        sampling = [gr.Slider(0.1, 1.5, value=0.6), gr.Slider(0.1, 1.0, value=0.95),
                    gr.Slider(1.0, 2.0, value=1.1), gr.Slider(100, 2000, value=1200, step=100)]  # fmt: skip
        gr.Button().click(generate_orpheus, [gr.Textbox(), speaker, *sampling], gr.Audio(type="numpy"),
                          api_name="generate_speech")  # fmt: skip
    from conftest import launch_on_free_port

    urls = {
        name: launch_on_free_port(app) for name, app in (("pocket", demo), ("orpheus", orpheus))
    }
    yield urls, calls
    demo.close()
    orpheus.close()
    monkeypatch.undo()


@GRADIO_WARNINGS
@pytest.mark.parametrize(
    ("model_id", "expected_call", "seconds"),
    [
        ("space:NeuralFalcon/Pocket-TTS",
         ("pocket", "Hello there.", "Default Voices", "azelma", None), 1.0),
        ("space:MohamedRashad/Orpheus-TTS",
         ("orpheus", "Hello there.", "tara", 0.6, 0.95, 1.1, 1200), 2.0),
    ],
)  # fmt: skip
def test_space_models_call_the_documented_endpoint(spaces, registry, model_id, expected_call,
                                                   seconds):  # fmt: skip
    urls, calls = spaces
    url = urls[expected_call[0]]
    model = registry_model(registry, model_id)
    local = replace(model, backend=replace(model.backend, options=MappingProxyType(
        {**model.backend.options, "space": url})))  # fmt: skip
    backend = make_backend(local, "audio", env={"HF_TOKEN": TOKEN})
    output = backend.generate("Hello there.", TIMEOUT)
    assert output.sample_rate == RATE
    assert output.duration == pytest.approx(seconds)
    assert calls[-1] == expected_call


# -- the start-up check against the stand-in --------------------------------------------------


def test_start_up_check_pauses_the_failing_hosted_model_with_its_reason(provider, tmp_path):
    doc = yaml.safe_load((ROOT / "registry.yaml").read_text(encoding="utf-8"))
    tts_en = next(a for a in doc["arenas"] if a["id"] == "tts-en")
    tts_en["prompts"] = str(ROOT / tts_en["prompts"])
    kept = ["espeak-ng/en-us", "hexgrad/Kokoro-82M:af_nicole@replicate"]
    tts_en["models"] = [m for m in tts_en["models"] if m["id"] in kept] + [
        {"id": "down/tts", "name": "A service that is down", "license": "none",
         "backend": {"type": "hf-inference", "model": "down/tts",
                     "base_url": f"{provider.url}/failing"}},
    ]  # fmt: skip
    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump({"arenas": [tts_en]}), encoding="utf-8")
    service = build_service(Settings(registry=path, data_dir=tmp_path / "data"),
                            env={"HF_TOKEN": TOKEN, "PATH": os.environ.get("PATH", "")})  # fmt: skip
    try:
        pool = service.pools["tts-en"]
        deadline = time.monotonic() + TIMEOUT
        while pool.health.checks_running():
            assert time.monotonic() < deadline, "the start-up checks did not finish"
            time.sleep(0.05)
        status = service.model_status()
        assert status["tts-en/down/tts"] == "paused: HTTP 503 from the service"
        assert status["tts-en/hexgrad/Kokoro-82M:af_nicole@replicate"] == "available"
        assert status["tts-en/espeak-ng/en-us"] == "available"
        assert sorted(pool.pairable()) == ["espeak-ng/en-us",
                                           "hexgrad/Kokoro-82M:af_nicole@replicate"]  # fmt: skip
        checked = [r["json"] for r in provider.requests if r["method"] == "POST"]
        shortest = min((p.text for p in service.registry.arena("tts-en").prompts), key=len)
        # Each hosted model was asked the arena's shortest prompt, once.
        assert {"inputs": shortest, "parameters": {}} in checked
        assert {"text": shortest, "voice": "af_nicole"} in [c.get("input") for c in checked]
        assert len(checked) == 2
    finally:
        service.close()
