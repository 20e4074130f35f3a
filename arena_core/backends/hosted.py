"""Hosted models: Hugging Face inference providers, another Gradio Space, any OpenAI-compatible chat API.

Registry blocks::

    # Hugging Face InferenceClient; the task follows the arena's modality
    # (audio: text_to_speech, text: chat_completion, image: text_to_image).
    backend: {type: hf-inference, model: Qwen/Qwen2.5-7B-Instruct, provider: auto}
    backend: {type: hf-inference, model: my-tts, base_url: "https://xyz.endpoints.huggingface.cloud"}

    # A Gradio app (Space id or URL): endpoint, arguments ("{text}" is replaced by the prompt),
    # which output to take.
    backend: {type: gradio-space, space: owner/tts-space, api_name: /predict,
              args: {text: "{text}", speed: 1.0}, output_index: 0}

    # Any OpenAI-compatible chat endpoint; the key is read from the variable named by key_env.
    backend: {type: openai-compatible, base_url: "https://router.huggingface.co/v1",
              model: openai/gpt-oss-20b, key_env: HF_TOKEN}

The three share everything but the call itself (:class:`HostedBackend`):
the token comes from the environment variable named by ``token_env``
(``HF_TOKEN`` unless set; ``key_env`` for OpenAI-compatible APIs) and a missing
token makes the model unavailable; :meth:`HostedBackend.availability` never
touches the network; errors from the HTTP stack (timeouts, HTTP status codes,
refused connections, a Space's own error) become :class:`BackendError` s with a
short reason; raw results (bytes, a file path, a PIL image, a chat message)
become an :class:`Output` of the arena's modality in one place
(:meth:`HostedBackend._to_output`).

The remote model may change behind the same id, so cached outputs of hosted
models are only as fresh as the cache: clear it to re-generate.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import threading
from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from arena_core.backends.audio import (
    KNOWN_AUDIO_FORMATS,
    AudioFormatError,
    decode_wav,
    sniff_audio_format,
)
from arena_core.backends.base import (
    Availability,
    Backend,
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    OptionSpec,
    describe_exception,
    package_version,
)
from arena_core.backends.output import Output, OutputError

#: The environment variable holding a Hugging Face token unless the registry names another.
DEFAULT_TOKEN_ENV = "HF_TOKEN"  # noqa: S105 - a variable name, not a token
#: Placeholder in a Space's ``args`` that is replaced by the prompt text.
TEXT_PLACEHOLDER = "{text}"
#: Default cap on a chat answer's length (tokens), so one battle cannot run up a large bill.
DEFAULT_MAX_TOKENS = 512
#: huggingface_hub's offline switch: when set, it refuses every request it would make.
HUB_OFFLINE_ENV = "HF_HUB_OFFLINE"
#: Values huggingface_hub reads as true.
_TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})
#: Class names of httpx / httpx2 errors meaning the service could not be reached at all.
_CONNECTION_ERRORS = frozenset({"ConnectError", "TransportError", "NetworkError"})
#: Options shared by the chat-capable backends.
_CHAT_OPTIONS = {
    "system": OptionSpec((str,), help="system prompt for chat models"),
    "max_tokens": OptionSpec(
        (int,), help=f"longest answer in tokens (default {DEFAULT_MAX_TOKENS})"
    ),
    "parameters": OptionSpec((dict,), help="extra request fields, sent as the API's extra_body"),
}


class HostedBackend(Backend):
    """A remote model: token handling, availability, error translation and output decoding."""

    remote = True

    #: Import name of the client library, and its pip distribution.
    library: ClassVar[str]
    distribution: ClassVar[str]
    #: The option naming the token variable, and its default (None: no token needed by default).
    token_option: ClassVar[str] = "token_env"  # noqa: S105 - an option name
    default_token_env: ClassVar[str | None] = DEFAULT_TOKEN_ENV

    def _token_env(self) -> str | None:
        return self.options.get(self.token_option, self.default_token_env)

    def _token(self) -> str | None:
        """The key from its variable, without the newline a pasted secret may keep (no key
        holds whitespace; with it every call failed authentication); None when unset."""
        name = self._token_env()
        return ((self.env.get(name) or "").strip() or None) if name else None

    def _check_availability(self) -> Availability:
        library = Availability.of_package(self.library, self.distribution)
        if not library.ok:
            return library
        if self._uses_hub_client() and _is_true(self.env.get(HUB_OFFLINE_ENV)):
            return Availability.no(f"{HUB_OFFLINE_ENV} is set")
        name = self._token_env()
        if name and not self._token():
            return Availability.no(f"{name} not set")
        return Availability.yes()

    def _uses_hub_client(self) -> bool:
        """Whether requests go through huggingface_hub, which refuses all of them in offline mode."""
        return True

    def _engine_version(self) -> str:
        return f"{package_version(self.distribution)}, {self.endpoint()}"

    @abstractmethod
    def endpoint(self) -> str:
        """What is called (model id, Space, URL), for the cache key and messages; no secrets."""

    @abstractmethod
    def _call(self, text: str, timeout: float) -> Any:
        """Make the request; returns the client library's raw result."""

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        self.voice_for(language)  # refuses a language the model is declared not to speak
        try:
            raw = self._call(text, timeout)
        except Exception as exc:  # the HTTP stack's many error types, mapped to ours
            raise translate_error(self.model_id, exc, timeout) from exc
        try:
            return self._to_output(raw)
        except (OutputError, AudioFormatError, OSError) as exc:
            raise BackendError(
                self.model_id, f"unusable answer from {self.endpoint()}: {exc}"
            ) from exc

    def _to_output(self, raw: Any) -> Output:
        """Bytes, a file path, a file dict, a PIL image or text -> an Output of the arena's modality."""
        if self.modality == "text":
            if not isinstance(raw, str):
                raise OutputError(f"expected text, got {type(raw).__name__}")
            return Output.from_text(raw)
        if callable(getattr(raw, "save", None)):  # a PIL image (InferenceClient.text_to_image)
            buffer = io.BytesIO()
            raw.save(buffer, format="PNG")
            raw = buffer.getvalue()
        data = raw if isinstance(raw, bytes) else _read_result_file(raw, self._downloads())
        if self.modality == "image":
            return Output.from_image(data)
        return decode_audio(data)

    def _downloads(self) -> Path | None:
        """The folder result files are downloaded into (None: no answer may be a file)."""
        return None


def _is_true(value: str | None) -> bool:
    return value is not None and value.strip().upper() in _TRUE_VALUES


def _read_result_file(raw: Any, downloads: Path | None) -> bytes:
    """A Gradio client file result (a path, or a dict with ``path``) -> its bytes; the file is
    removed, and its folder when that leaves it empty: gradio_client downloads each file into
    a folder of its own (named by the file's hash), which stayed behind, one per generation.
    (It also leaves an empty folder of its own in the system's temporary folder per download,
    which it does not name to its caller: an upstream leak, left.) Only a file inside
    ``downloads`` is read: gradio_client hands a text output over as it is, so a Space that
    answered ``"/data/votes/x.jsonl"`` had that file read as its clip, then deleted."""
    path = raw.get("path") if isinstance(raw, Mapping) else raw
    if not isinstance(path, str | Path):
        raise OutputError(f"expected a file, got {type(raw).__name__}")
    path = Path(path).resolve()
    if downloads is None or not path.is_relative_to(downloads.resolve()):
        raise OutputError("the answer names a file the client did not download")
    data = path.read_bytes()
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty (another download), or gone: left as it is
        path.parent.rmdir()
    return data


def decode_audio(data: bytes) -> Output:
    """WAV bytes -> audio Output; other containers (FLAC, MP3, Ogg) need the optional ``soundfile``."""
    found = sniff_audio_format(data)
    if found == "WAV":
        return Output.from_audio(*decode_wav(data))
    if found not in KNOWN_AUDIO_FORMATS:
        raise AudioFormatError(f"not audio: {found}")
    try:
        import soundfile
    except ImportError:
        raise AudioFormatError(
            f"the service sent {found} audio; decoding it needs 'pip install soundfile'"
        ) from None
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="int16", always_2d=False)
    except RuntimeError as exc:  # soundfile.LibsndfileError
        raise AudioFormatError(f"unreadable {found}: {exc}") from None
    return Output.from_audio(rate, samples)


def translate_error(model_id: str, exc: BaseException, timeout: float) -> BackendError:
    """Map an exception from huggingface_hub / httpx / gradio_client to a short typed error.

    Matched by duck typing (``response.status_code``, class names) so this module
    imports none of the client libraries.
    """
    if isinstance(exc, BackendError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or any("Timeout" in name for name in names):
        return BackendTimeout(model_id, f"no answer within {timeout:g} s")
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return BackendError(model_id, f"HTTP {status} from the service")
    if isinstance(exc, ConnectionError) or names & _CONNECTION_ERRORS:
        return BackendUnavailable(model_id, f"cannot reach the service ({type(exc).__name__})")
    if "AppError" in names:
        return BackendError(
            model_id, f"the Space reported an error: {getattr(exc, 'message', exc)}"
        )
    return BackendError(model_id, describe_exception(exc))


def _chat_messages(system: str | None, text: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    return [*messages, {"role": "user", "content": text}]


class _InferenceClientBackend(HostedBackend):
    """Calls through ``huggingface_hub.InferenceClient`` (also an OpenAI-compatible client)."""

    library = "huggingface_hub"
    distribution = "huggingface_hub"

    def _chat(self, client: Any, model: str, text: str) -> str:
        response = client.chat_completion(
            _chat_messages(self.options.get("system"), text),
            model=model,
            max_tokens=self.options.get("max_tokens") or DEFAULT_MAX_TOKENS,
            extra_body=dict(self.options.get("parameters") or {}) or None,
        )
        content = response.choices[0].message.content
        if not content:
            raise OutputError("the chat answer is empty")
        return content


class HfInferenceBackend(_InferenceClientBackend):
    """``type: hf-inference``: a model on Hugging Face inference providers (or an endpoint URL)."""

    type_name = "hf-inference"
    modalities = frozenset({"audio", "text", "image"})
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "model": OptionSpec((str,), required=True, help="Hub model id"),
            "provider": OptionSpec((str,), help="inference provider (default: auto)"),
            "base_url": OptionSpec(
                (str,), help="an Inference Endpoint URL to call instead of a provider"
            ),
            "token_env": OptionSpec(
                (str,), help=f"variable holding the token (default {DEFAULT_TOKEN_ENV})"
            ),
            "language": OptionSpec((str,), help="the one language the model speaks"),
            **_CHAT_OPTIONS,
        }
    )

    def endpoint(self) -> str:
        return (
            self.options.get("base_url")
            or f"{self.options['model']} via {self.options.get('provider', 'auto')}"
        )

    def _call(self, text: str, timeout: float) -> Any:
        from huggingface_hub import InferenceClient

        base_url = self.options.get("base_url")
        client = InferenceClient(
            model=base_url or self.options["model"],
            provider=None if base_url else self.options.get("provider"),
            token=self._token(),
            timeout=timeout,
        )
        extra = dict(self.options.get("parameters") or {}) or None
        if self.modality == "text":
            return self._chat(client, self.options["model"], text)
        if self.modality == "image":
            return client.text_to_image(text, extra_body=extra)
        return client.text_to_speech(text, extra_body=extra)


class OpenAICompatibleBackend(_InferenceClientBackend):
    """``type: openai-compatible``: ``POST {base_url}/chat/completions`` with a bearer key."""

    type_name = "openai-compatible"
    modalities = frozenset({"text"})
    token_option = "key_env"  # noqa: S105 - an option name
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "base_url": OptionSpec((str,), required=True, help="API root, e.g. https://host/v1"),
            "model": OptionSpec((str,), required=True, help="model name the API expects"),
            "key_env": OptionSpec((str,), required=True, help="variable holding the API key"),
            "language": OptionSpec((str,), help="the one language the model speaks"),
            **_CHAT_OPTIONS,
        }
    )

    def endpoint(self) -> str:
        return f"{self.options['model']} at {self.options['base_url']}"

    def _call(self, text: str, timeout: float) -> Any:
        from huggingface_hub import InferenceClient

        # The key is always passed (availability requires it), so the client never falls
        # back to a locally saved Hugging Face token, which must not go to a third party.
        client = InferenceClient(
            base_url=self.options["base_url"], api_key=self._token(), timeout=timeout
        )
        return self._chat(client, self.options["model"], text)


class GradioSpaceBackend(HostedBackend):
    """``type: gradio-space``: one endpoint of a Gradio app, called with ``gradio_client``.

    The client connects (fetches the app's config) on first use and is kept; a
    failed connection is retried on the next call.
    """

    type_name = "gradio-space"
    modalities = frozenset({"audio", "text", "image"})
    library = "gradio_client"
    distribution = "gradio_client"
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "space": OptionSpec((str,), required=True, help="Space id (owner/name) or app URL"),
            "api_name": OptionSpec((str,), required=True, help="endpoint, e.g. /predict"),
            "args": OptionSpec((dict, list), help='arguments; "{text}" is replaced by the prompt'),
            "output_index": OptionSpec((int,), help="which output to take when there are several"),
            "token_env": OptionSpec(
                (str,), help=f"variable holding the token (default {DEFAULT_TOKEN_ENV})"
            ),
            "language": OptionSpec((str,), help="the one language the model speaks"),
        }
    )

    def __init__(self, model, modality, env=None):
        super().__init__(model, modality, env)
        self._client = None
        self._client_lock = threading.Lock()
        self._download_dir: Path | None = None

    def endpoint(self) -> str:
        return f"{self.options['space']} {self.options['api_name']}"

    def _uses_hub_client(self) -> bool:
        return not self.options["space"].startswith(
            ("http://", "https://")
        )  # a Space id is looked up

    def _connected(self, timeout: float) -> Any:
        with self._client_lock:
            if self._client is None:
                from gradio_client import Client

                if self._download_dir is None:  # one per backend, kept across reconnections
                    self._download_dir = Path(tempfile.mkdtemp(prefix="arena-space-"))
                self._client = Client(
                    self.options["space"],
                    token=self._token(),
                    verbose=False,
                    httpx_kwargs={"timeout": timeout},
                    download_files=str(self._download_dir),
                    analytics_enabled=False,
                )
            return self._client

    def _downloads(self) -> Path | None:
        return self._download_dir

    def _call(self, text: str, timeout: float) -> Any:
        args, kwargs = fill_arguments(self.options.get("args"), text)
        job = self._connected(timeout).submit(*args, api_name=self.options["api_name"], **kwargs)
        try:
            result = job.result(timeout=timeout)
        except TimeoutError:
            job.cancel()
            raise
        if isinstance(result, tuple | list):
            index = self.options.get("output_index") or 0
            if index >= len(result):
                raise OutputError(
                    f"the endpoint returned {len(result)} outputs, output_index is {index}"
                )
            result = result[index]
        return result


def fill_arguments(template: Any, text: str) -> tuple[list, dict]:
    """Registry ``args`` (a list: positional, a mapping: keywords; default ``[text]``) with the prompt filled in."""

    def fill(value: Any) -> Any:
        return value.replace(TEXT_PLACEHOLDER, text) if isinstance(value, str) else value

    if template is None:
        return [text], {}
    if isinstance(template, Mapping):
        return [], {key: fill(value) for key, value in template.items()}
    return [fill(value) for value in template], {}
