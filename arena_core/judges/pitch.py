"""The pitch (F0) of speech, frame by frame, with numpy only: YIN.

YIN (de Cheveigné and Kawahara, "YIN, a fundamental frequency estimator for
speech and music", JASA 111(4), 2002) finds the period of each frame as the
first dip of the cumulative-mean-normalised difference function below an
absolute threshold, refined by parabolic interpolation (steps 1-5 of the
paper; step 6, the best-local-estimate search, is left out). A frame with no
dip below the threshold, or too quiet, is unvoiced (NaN): fricatives, pauses,
noise. Every frame is computed at once (the difference function through the
FFT), so a 4 s clip costs a few milliseconds.

The clip is first brought to :data:`ANALYSIS_RATE` by FFT resampling (numpy):
the pitch of speech lies far below its Nyquist frequency, and one rate keeps
the frame and lag grids the same for every engine.
"""

from __future__ import annotations

import numpy as np

#: Rate (Hz) the clip is analysed at: 8 kHz of bandwidth, plenty for F0 up to 500 Hz.
ANALYSIS_RATE = 16_000
#: Lowest and highest F0 searched (Hz): below a bass speaking voice, above a child's.
F0_MIN, F0_MAX = 60.0, 500.0
#: Step between frames (seconds).
HOP_SECONDS = 0.010
#: YIN's absolute threshold on the normalised difference (the paper's value, 0.1).
YIN_THRESHOLD = 0.1
#: A frame quieter than this below the loudest frame (dB) is unvoiced whatever its shape.
VOICING_FLOOR_DB = -40.0


def resample(x: np.ndarray, rate: int, target: int) -> np.ndarray:
    """``x`` from ``rate`` to ``target`` Hz by zero-padding or truncating its spectrum.

    Ideal band-limited resampling of a periodic extension; the wrap at the ends
    touches only the first and last few milliseconds, where speech clips are silent.
    """
    x = np.asarray(x, dtype=np.float64)
    if rate == target or len(x) == 0:
        return x
    n_out = max(1, round(len(x) * target / rate))
    spectrum = np.fft.rfft(x)
    bins = n_out // 2 + 1
    if len(spectrum) >= bins:
        spectrum = spectrum[:bins]
    else:
        spectrum = np.concatenate([spectrum, np.zeros(bins - len(spectrum), complex)])
    return np.fft.irfft(spectrum, n_out) * (n_out / len(x))


def f0_track(samples: np.ndarray, rate: int) -> np.ndarray:
    """F0 (Hz) of each :data:`HOP_SECONDS` frame of a mono clip, NaN where unvoiced.

    ``samples`` are int16 or floats (only their shape matters, not their scale).
    """
    x = resample(np.asarray(samples, dtype=np.float64), rate, ANALYSIS_RATE)
    tau_min = int(ANALYSIS_RATE // F0_MAX)
    tau_max = int(np.ceil(ANALYSIS_RATE / F0_MIN))
    window = tau_max  # the integration window: one period of the lowest F0
    length = window + tau_max
    hop = round(HOP_SECONDS * ANALYSIS_RATE)
    if len(x) < length:
        return np.full(0, np.nan)
    frames = np.lib.stride_tricks.sliding_window_view(x, length)[::hop]
    cmnd = _normalised_difference(frames, window, tau_max)
    energy = np.einsum("ij,ij->i", frames[:, :window], frames[:, :window])
    loud = (
        energy >= energy.max() * 10 ** (VOICING_FLOOR_DB / 10) if energy.max() > 0 else energy > 0
    )
    return _periods(cmnd, tau_min, loud)


def _normalised_difference(frames: np.ndarray, window: int, tau_max: int) -> np.ndarray:
    """YIN's d'(tau) for tau = 0..tau_max of every frame (steps 2-3 of the paper).

    d(tau) = sum_{j<W} (x_j - x_{j+tau})^2 = E_0 + E_tau - 2 r(tau), with the
    cross-correlation r from the FFT and the energies from a cumulative sum.
    """
    size = 1 << int(np.ceil(np.log2(frames.shape[1] + window)))
    head = np.fft.rfft(frames[:, :window], size)
    whole = np.fft.rfft(frames, size)
    r = np.fft.irfft(np.conj(head) * whole, size)[:, : tau_max + 1]
    power = np.concatenate([np.zeros((len(frames), 1)), np.cumsum(frames**2, axis=1)], axis=1)
    taus = np.arange(tau_max + 1)
    e_tau = power[:, taus + window] - power[:, taus]
    d = np.maximum(e_tau[:, :1] + e_tau - 2 * r, 0.0)
    running = np.cumsum(d[:, 1:], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cmnd = d[:, 1:] * taus[1:] / running
    cmnd = np.where(running > 0, cmnd, 1.0)
    return np.concatenate([np.ones((len(frames), 1)), cmnd], axis=1)


def _periods(cmnd: np.ndarray, tau_min: int, loud: np.ndarray) -> np.ndarray:
    """F0 per frame from d': the first local minimum below the threshold (steps 4-5).

    The first dip below the threshold, followed down to its minimum, is the first
    local minimum whose value is below the threshold (every earlier minimum is above
    it), so all frames are searched at once.
    """
    d = cmnd[:, tau_min:]
    left = np.concatenate([np.full((len(d), 1), np.inf), d[:, :-1]], axis=1)
    right = np.concatenate([d[:, 1:], np.full((len(d), 1), np.inf)], axis=1)
    dips = (d < YIN_THRESHOLD) & (d < left) & (d <= right)
    found = dips.any(axis=1) & loud
    first = np.argmax(dips, axis=1)
    rows = np.arange(len(d))
    # Parabolic interpolation through the dip and its neighbours (edges use the dip alone).
    at = np.clip(first, 1, d.shape[1] - 2)
    y0, y1, y2 = d[rows, at - 1], d[rows, at], d[rows, at + 1]
    curvature = y0 - 2 * y1 + y2
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(curvature > 0, 0.5 * (y0 - y2) / curvature, 0.0)
    shift = np.where(first == at, np.clip(shift, -0.5, 0.5), 0.0)
    tau = tau_min + first + shift
    return np.where(found, ANALYSIS_RATE / tau, np.nan)
