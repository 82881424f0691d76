"""The native kernels (native/, an OpenVINO CPU extension): finding the library and putting its op in graphs.

`native/` builds libqwen3tts_native.so (scripts/setup.sh). Its one op, `CompressedMatMul`, computes
x [..., K] f32 times an INT8_SYM weight matrix [N, K] scaled per output channel, which is what the
subgraph nncf writes for every compressed MatMul means (Constant i8 -> Convert -> Multiply(scale) ->
[Convert f32] -> MatMul(transpose_b)). `replace_int8_matmuls` swaps those subgraphs for the op in a
model read from a bundle, before it is compiled; the weights stay the bundle's own int8 Constant
(memory-mapped from the `.bin`), so nothing is repacked. The library also has a C entry
(`qwen3tts_native_matmul_i8`) that the tests and bench/native_kernels.py call directly.

Which graphs get the op is a measured decision per CPU class (runtime/native_plan.py); this module
only knows how.
"""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov

log = logging.getLogger(__name__)

LIBRARY_NAME = "libqwen3tts_native.so"
OP_TYPE = "CompressedMatMul"
# native/build/ of the source tree this package runs from (scripts/setup.sh builds it there)
SOURCE_TREE_LIBRARY = Path(__file__).resolve().parents[3] / "native" / "build" / LIBRARY_NAME
# qwen3tts/lib/ beside this package, where the Debian package installs it (packaging/debian/rules):
# an installed box has no source tree, and a path relative to the package needs no configuration
PACKAGED_LIBRARY = Path(__file__).resolve().parents[1] / "lib" / LIBRARY_NAME
# The first of the two that exists (a checkout's own build wins); the source tree's if neither does, so
# that "not built" names the place scripts/setup.sh builds it. devices.native_library overrides both.
DEFAULT_LIBRARY = next(
    (p for p in (SOURCE_TREE_LIBRARY, PACKAGED_LIBRARY) if p.is_file()), SOURCE_TREE_LIBRARY
)


@dataclass(frozen=True)
class NativeLibrary:
    """The loaded extension: its path, the kernel set it runs on this CPU, and a factory for its op."""

    path: Path
    isa: str  # "avx512", "avx2" or "generic": what this CPU runs (or QWEN3TTS_NATIVE_ISA asked for)
    _cdll: ctypes.CDLL
    _factory: object  # openvino.utils.node_factory.NodeFactory with the extension added

    @property
    def cdll(self) -> ctypes.CDLL:
        """The library's C entries (runtime/native_decode/ declares the fused decode's)."""
        return self._cdll

    def supports(self, isa: str) -> bool:
        return bool(self._cdll.qwen3tts_native_supported(isa.encode()))

    def matmul_i8(
        self, x: np.ndarray, weights: np.ndarray, scale: np.ndarray, isa: str | None = None
    ) -> np.ndarray:
        """x [M, K] f32 times weights [N, K] i8, scaled by scale [N], with kernel set `isa` (default: the
        op's): the kernels without OpenVINO."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        weights = np.ascontiguousarray(weights, dtype=np.int8)
        scale = np.ascontiguousarray(scale, dtype=np.float32)
        (m, k), (n, k_w) = x.shape, weights.shape
        if k != k_w or scale.shape != (n,):
            raise ValueError(f"shapes differ: x {x.shape}, weights {weights.shape}, scale {scale.shape}")
        y = np.empty((m, n), dtype=np.float32)
        status = self._cdll.qwen3tts_native_matmul_i8(
            (isa or self.isa).encode(),
            x.ctypes.data,
            m,
            weights.ctypes.data,
            scale.ctypes.data,
            n,
            k,
            y.ctypes.data,
        )
        if status != 0:
            raise ValueError(f"the native library cannot run kernel set {isa!r} on this CPU")
        return y

    def compressed_matmul(self, x: ov.Output, weights: ov.Output, scale: ov.Output) -> ov.Node:
        return self._factory.create(OP_TYPE, [x, weights, scale], {})


def load_library(path: Path | None = None, core: ov.Core | None = None) -> NativeLibrary | None:
    """The extension at `path` (default: DEFAULT_LIBRARY, the source tree's build or the package's copy),
    added to `core` so that graphs with its op compile; None, with the reason logged, if it is not there
    or does not load."""
    if path and not Path(path).is_file():
        log.info("native kernels: %s (devices.native_library) not built", path)
        return None
    path = Path(path) if path else DEFAULT_LIBRARY
    if not path.is_file():
        log.info(
            "native kernels: not built: neither %s (scripts/setup.sh builds it) nor %s (the Debian "
            "package installs it) exists",
            SOURCE_TREE_LIBRARY,
            PACKAGED_LIBRARY,
        )
        return None
    from openvino.utils.node_factory import NodeFactory

    try:
        cdll = ctypes.CDLL(str(path))
        factory = NodeFactory()
        factory.add_extension(str(path))
        if core is not None:
            core.add_extension(str(path))
    except (OSError, RuntimeError) as exc:
        log.warning("native kernels: %s does not load: %s", path, exc)
        return None
    _declare(cdll)
    return NativeLibrary(path, cdll.qwen3tts_native_isa().decode(), cdll, factory)


def _declare(cdll: ctypes.CDLL) -> None:
    pointer, i64 = ctypes.c_void_p, ctypes.c_int64
    cdll.qwen3tts_native_isa.restype = ctypes.c_char_p
    cdll.qwen3tts_native_isa.argtypes = []
    cdll.qwen3tts_native_supported.restype = ctypes.c_int
    cdll.qwen3tts_native_supported.argtypes = [ctypes.c_char_p]
    cdll.qwen3tts_native_matmul_i8.restype = ctypes.c_int
    cdll.qwen3tts_native_matmul_i8.argtypes = [
        ctypes.c_char_p,
        pointer,
        i64,
        pointer,
        pointer,
        i64,
        i64,
        pointer,
    ]


def replace_int8_matmuls(model: ov.Model, library: NativeLibrary) -> int:
    """Swap every INT8_SYM compressed MatMul of `model` for the native op, in place; returns how many.

    Matches MatMul(x, W, transpose_a=False, transpose_b=True) with W = [Convert f32] of
    Multiply(Convert(Constant i8 [N, K]), Constant scale [N, 1]); anything else (f16/f32 weights,
    zero points, INT4, transposed activations) keeps the plugin's MatMul.
    """
    replaced = 0
    for node in model.get_ordered_ops():
        if node.get_type_name() != "MatMul":
            continue
        found = _int8_weights(node)
        if found is None:
            continue
        weights, scale = found
        native = library.compressed_matmul(node.input_value(0), weights, scale)
        native.set_friendly_name(node.get_friendly_name())
        node.output(0).replace(native.output(0))
        replaced += 1
    if replaced:
        model.validate_nodes_and_infer_types()
    return replaced


def _int8_weights(matmul: ov.Node) -> tuple[ov.Output, ov.Output] | None:
    """(the i8 Constant's output, an f32 [N] scale Constant's output) if `matmul` is INT8_SYM compressed."""
    attrs = matmul.get_attributes()
    if attrs.get("transpose_a") or not attrs.get("transpose_b"):
        return None
    if matmul.get_input_element_type(0) != ov.Type.f32:
        return None
    node = matmul.input_value(1).get_node()
    if node.get_type_name() == "Convert":  # f16 decompression widened to f32 for the MatMul
        node = node.input_value(0).get_node()
    if node.get_type_name() != "Multiply":
        return None
    inputs = [node.input_value(i).get_node() for i in range(2)]
    for widened, scale in (inputs, inputs[::-1]):
        if widened.get_type_name() != "Convert" or scale.get_type_name() != "Constant":
            continue
        weights = widened.input_value(0).get_node()
        if weights.get_type_name() != "Constant" or weights.get_output_element_type(0) != ov.Type.i8:
            continue
        shape = weights.get_output_shape(0)
        rows = int(shape[0]) if len(shape) == 2 else 0
        values = scale.get_data()
        if rows == 0 or values.size != rows or tuple(scale.get_output_shape(0)) not in ((rows, 1), (rows,)):
            continue
        scale_f32 = ov.op.Constant(np.ascontiguousarray(values.reshape(rows), dtype=np.float32))
        return weights.output(0), scale_f32.output(0)
    return None
