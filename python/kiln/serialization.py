"""kiln.save / kiln.load: PyTorch's zip checkpoint format for any picklable object, safetensors for
files named *.safetensors (kiln's C++ reader and writer, as before). And tensors are picklable.

PyTorch's format, written and read here from its description: a zip archive (entries stored, not
compressed, their data aligned to 64 bytes) whose entries all sit under one folder, <name>/:
  data.pkl      the object, pickled with protocol 2; a tensor is the call
                torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
                requires_grad, OrderedDict()) and its storage a persistent id
                ('storage', torch.<Kind>Storage, key, 'cpu', numel)
  data/<key>    each storage's bytes, little-endian
  byteorder     "little";  version  "3\n";  .format_version "1";  .storage_alignment "64"
Tensors that view one kiln storage share one storage entry, so they share memory again after
loading. The globals written are the ones torch.load(weights_only=True) accepts (tensors,
parameters, storages, dtypes, torch.device, OrderedDict), so kiln's checkpoints load in PyTorch, and
PyTorch's checkpoints of tensors and state dicts load in kiln. See docs/python-api.md."""
import _compat_pickle
import collections
import copyreg
import ctypes
import io
import os
import pickle

from . import _C

# kiln dtype name -> (torch storage class name, NumPy dtype of the bytes, item size)
_KINDS = {
    "float32": ("FloatStorage", "<f4", 4), "float64": ("DoubleStorage", "<f8", 8),
    "float16": ("HalfStorage", "<f2", 2), "bfloat16": ("BFloat16Storage", "<u2", 2),
    "int64": ("LongStorage", "<i8", 8), "int32": ("IntStorage", "<i4", 4), "int16": ("ShortStorage", "<i2", 2),
    "int8": ("CharStorage", "i1", 1), "uint8": ("ByteStorage", "u1", 1), "bool": ("BoolStorage", "?", 1),
}
_STORAGE_TO_DTYPE = {storage: name for name, (storage, _, _) in _KINDS.items()}
_DTYPE_NAMES = set(_KINDS)


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _kiln_dtype(name):
    return getattr(_C, name)


# ---- tensor <-> bytes (shared by pickling and by checkpoints) -----------------------------------

def _storage_memory(t, start, count):
    """The bytes of `count` elements of t's storage from element `start`, without a copy (as_strided
    checks the bounds; the memoryview keeps the tensor alive)."""
    if count == 0:
        return memoryview(b"")
    span = t.as_strided((count,), (1,), start)
    memory = (ctypes.c_char * (count * t.element_size())).from_address(span.data_ptr())
    memory._tensor = span
    return memoryview(memory).cast("B")


def _from_buffer(buf, dtype_name):
    """A 1-D kiln tensor of the bytes in `buf` (a writable uint8 NumPy array or bytes-like)."""
    import numpy as np  # only when tensors are read: `import kiln` does not need NumPy
    if dtype_name not in _KINDS:
        raise _C.Error(f"load(): kiln has no dtype {dtype_name}")
    raw = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf
    _, np_dtype, size = _KINDS[dtype_name]
    if raw.size % size:
        raise _C.Error(f"load(): {raw.size} bytes are not a whole number of {dtype_name} elements")
    if not raw.flags.writeable:
        raw = raw.copy()
    values = raw.view(np_dtype)
    if dtype_name == "bfloat16":  # NumPy has no bfloat16: widen the bits to float32 exactly, then narrow
        return _C.from_numpy((values.astype("<u4") << 16).view("<f4")).to(_C.bfloat16)
    return _C.from_numpy(values)


def _rebuild_pickled(dtype_name, shape, data, requires_grad, is_parameter=False):
    t = _from_buffer(bytearray(data), dtype_name).reshape(shape)
    if is_parameter:
        from .nn.parameter import Parameter
        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _reduce_tensor(t, protocol=2):
    """Plain pickling (multiprocessing, pickle.dumps, copy): the values, contiguous; views of one
    storage become independent copies. kiln.save keeps the sharing."""
    from .nn.parameter import Parameter
    c = t.detach().contiguous()
    return (_rebuild_pickled, (_dtype_name(t.dtype), tuple(t.shape), bytes(_storage_memory(c, c.storage_offset(), c.numel())),
                               bool(t.requires_grad), isinstance(t, Parameter)))


def _install_pickling():
    _C.Tensor.__reduce_ex__ = _reduce_tensor
    copyreg.pickle(_C.dtype, lambda d: (_kiln_dtype, (_dtype_name(d),)))
    copyreg.pickle(_C.device, lambda d: (_C.device, (str(d),)))


# ---- writing PyTorch's zip format -----------------------------------------------------------------

class _TorchName:
    """A global of PyTorch's, written into data.pkl by name (torch need not be installed)."""
    _interned = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._interned:
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            cls._interned[key] = obj
        return cls._interned[key]

    def __call__(self, *args):  # pickle wants a reduce function callable; only torch.load calls it
        raise TypeError(f"{self.module}.{self.name} is PyTorch's, written by name into checkpoints")


class _StorageRef:
    """Stands for the storage of a tensor inside the pickle; persistent_id turns it into torch's
    ('storage', ...) id."""

    def __init__(self, tensor):
        self.tensor = tensor


def _storage_base(t):
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _reach_bytes(t):
    """Bytes of t's storage that t reaches, from the storage's start."""
    if t.numel() == 0:
        return 0
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return (last + 1) * t.element_size()


class _Storages:
    """The storages a checkpoint holds, keyed by their address: key, bytes to write, a tensor of them."""

    def __init__(self):
        self.by_base = {}

    def note(self, t):
        base = _storage_base(t)
        entry = self.by_base.get(base)
        if entry is None:
            entry = self.by_base[base] = [str(len(self.by_base)), 0, t]
        entry[1] = max(entry[1], _reach_bytes(t))
        return entry


class _CheckpointPickler(pickle._Pickler):
    """pickle's Python pickler (its dispatch table can write a GLOBAL by name), protocol 2 as
    torch.save. It runs twice: a storage's size is part of every tensor's id, so the first pass (into
    a null sink) sees how far all views reach before the second writes."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self._storages = storages

    def _save_torch_name(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_TorchName] = _save_torch_name
    dispatch[_C.dtype] = lambda self, d: self.save(_TorchName("torch", _dtype_name(d)))

    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            from .nn.parameter import Parameter
            if isinstance(obj, Parameter):
                return (_TorchName("torch._utils", "_rebuild_parameter"),
                        (obj.detach(), bool(obj.requires_grad), collections.OrderedDict()))
            if _dtype_name(obj.dtype) not in _KINDS:
                raise _C.Error(f"save(): kiln cannot write {obj.dtype} tensors in PyTorch's format")
            self._storages.note(obj)
            return (_TorchName("torch._utils", "_rebuild_tensor_v2"),
                    (_StorageRef(obj), obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()),
                     bool(obj.requires_grad), collections.OrderedDict()))
        if isinstance(obj, _C.device):
            return (_TorchName("torch", "device"), (str(obj),))
        return NotImplemented

    def persistent_id(self, obj):
        if not isinstance(obj, _StorageRef):
            return None
        t = obj.tensor
        key, nbytes, _ = self._storages.note(t)
        return ("storage", _TorchName("torch", _KINDS[_dtype_name(t.dtype)][0]), key, "cpu",
                nbytes // t.element_size())


class _NullSink:
    def write(self, b):
        return len(b)


_ALIGN = 64


def _write_entry(zf, name, data):
    """A stored entry whose data starts at a multiple of 64 bytes (padding in the extra field, as
    torch writes it, so readers may map storages in place)."""
    import zipfile
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode("utf-8")) + 4
    pad = (-(zf.fp.tell() + header)) % _ALIGN
    info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad
    info.file_size = len(data)
    with zf.open(info, "w", force_zip64=len(data) > 0x7FFF0000) as out:
        out.write(data)


def _write_zip(obj, fileobj):
    import zipfile  # zipfile and tempfile load with the first checkpoint: `import kiln` stays quick
    storages = _Storages()
    _CheckpointPickler(_NullSink(), storages).dump(obj)
    pkl = io.BytesIO()
    _CheckpointPickler(pkl, storages).dump(obj)
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as zf:
        _write_entry(zf, "archive/data.pkl", pkl.getvalue())
        _write_entry(zf, "archive/.format_version", b"1")
        _write_entry(zf, "archive/.storage_alignment", str(_ALIGN).encode())
        _write_entry(zf, "archive/byteorder", b"little")
        for key, nbytes, t in storages.by_base.values():
            _write_entry(zf, f"archive/data/{key}", _storage_memory(t, 0, nbytes // t.element_size()))
        _write_entry(zf, "archive/version", b"3\n")


# ---- reading PyTorch's zip format -----------------------------------------------------------------

class UnpicklingError(_C.Error, pickle.UnpicklingError):
    """weights_only=True met a global it does not allow (a kiln.Error and a pickle.UnpicklingError,
    the type torch.load raises)."""


class _StorageKind:
    def __init__(self, dtype_name):
        self.dtype_name = dtype_name


class _LoadedStorage:
    def __init__(self, tensor):
        self.tensor = tensor


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    t = storage.tensor.as_strided(tuple(size), tuple(stride), storage_offset)
    return t.requires_grad_(True) if requires_grad else t


def _rebuild_parameter(data, requires_grad, backward_hooks=None, *state):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_from_type_v2(func, new_type, args, state):
    return func(*args)  # the tensor; kiln has no tensor subclasses to restore


_TORCH_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch", "device"): lambda *a: _C.device(*a),
    ("torch", "Size"): tuple,
    ("collections", "OrderedDict"): collections.OrderedDict,
}
# What torch.load(weights_only=True) also allows beyond the above, from Python's builtins.
_SAFE = {("collections", "Counter"), ("builtins", "set"), ("builtins", "complex"), ("builtins", "bytearray"),
         ("_codecs", "encode")}


class _CheckpointUnpickler(pickle.Unpickler):
    def __init__(self, file, persistent_load, weights_only):
        super().__init__(file)
        self._load_storage = persistent_load
        self._weights_only = weights_only

    def persistent_load(self, pid):
        return self._load_storage(pid)

    def find_class(self, module, name):
        # Protocol 2 writes Python 2's names (__builtin__.set); pickle maps them in its own
        # find_class, which this one replaces.
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        if (module, name) in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[(module, name)]
        if module == "torch" and name in _DTYPE_NAMES:
            return _kiln_dtype(name)
        if module == "torch" and name in _STORAGE_TO_DTYPE:
            return _StorageKind(_STORAGE_TO_DTYPE[name])
        if self._weights_only and (module, name) not in _SAFE:
            raise UnpicklingError(
                f"load(): weights_only=True refuses the global {module}.{name} in the checkpoint: only tensors, "
                f"numbers, strings, containers, dtypes and devices load without running the file's code\n"
                f"  hint: pass weights_only=False only for a file you trust (unpickling it can run any code)")
        if module == "torch" or module.startswith("torch."):
            raise _C.Error(f"load(): the checkpoint pickles {module}.{name}, an object of PyTorch's that kiln "
                           f"cannot build\n  hint: save a state_dict() (tensors, numbers, strings, containers)")
        return super().find_class(module, name)


class _Corrupt(Exception):
    pass


def _read_zip(zf, name, map_location, weights_only):
    records = zf.namelist()
    pkl = [r for r in records if r.endswith("/data.pkl") and r.count("/") == 1] or \
          [r for r in records if r == "data.pkl"]
    if not pkl:
        raise _Corrupt("it is a zip archive without a data.pkl entry (not a torch.save checkpoint)")
    prefix = pkl[0][:-len("data.pkl")]
    if prefix + "byteorder" in records and zf.read(prefix + "byteorder") != b"little":
        raise _Corrupt("it was written on a big-endian machine, which kiln does not read")
    loaded = {}

    def load_storage(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageKind)):
            raise _Corrupt(f"data.pkl names a storage kiln does not know: {pid!r}")
        _, kind, key, location, numel = pid
        if key not in loaded:
            record = f"{prefix}data/{key}"
            try:
                info = zf.getinfo(record)
            except KeyError:
                raise _Corrupt(f"the storage entry {record} is missing") from None
            itemsize = _KINDS[kind.dtype_name][2]
            if info.file_size < numel * itemsize:
                raise _Corrupt(f"the storage entry {record} holds {info.file_size} bytes, "
                               f"but data.pkl says {numel} elements of {itemsize} bytes")
            import numpy as np
            raw = np.empty(info.file_size, dtype=np.uint8)
            with zf.open(info) as f:
                got = f.readinto(raw)
            if got != info.file_size:
                raise _Corrupt(f"the storage entry {record} is truncated")
            t = _from_buffer(raw, kind.dtype_name)
            if callable(map_location):
                mapped = map_location(t, location)
                t = mapped if isinstance(mapped, _C.Tensor) else t
            loaded[key] = (kind.dtype_name, _LoadedStorage(t))
        dtype_name, storage = loaded[key]
        if dtype_name != kind.dtype_name:
            raise _C.Error(f"load(): storage {key} is viewed as {dtype_name} and as {kind.dtype_name}; "
                           f"kiln tensors cannot share bytes across dtypes")
        return storage

    with zf.open(pkl[0]) as f:
        return _CheckpointUnpickler(f, load_storage, weights_only).load()


def _check_map_location(map_location):
    if map_location is None or callable(map_location):
        return
    targets = map_location.values() if isinstance(map_location, dict) else [map_location]
    for target in targets:
        if str(target).split(":")[0] != "cpu":
            raise _C.Error(f"load(): map_location={map_location!r} asks for a device kiln does not have\n"
                           f"  hint: kiln runs on the CPU: omit map_location or pass 'cpu'")


# ---- kiln.save / kiln.load --------------------------------------------------------------------------

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_UMASK = os.umask(0)
os.umask(_UMASK)


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj, f, metadata=None, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Writes `obj` to `f` (a path or a binary file object).

    A path ending in .safetensors (or a call with `metadata`) writes a safetensors file of a dict of
    tensors, atomically, as before. Anything else is written in PyTorch's zip checkpoint format
    (torch.save's): any picklable object (dicts nesting tensors, numbers, strings, optimizer
    state_dicts, model arguments), tensors that view one storage sharing it in the file; torch.load
    reads it. A path is written atomically (a temporary file renamed over it)."""
    if metadata is not None and not isinstance(metadata, dict) and hasattr(metadata, "dumps"):
        metadata = None  # torch.save(obj, f, pickle_module): kiln always pickles with its own pickler
    if not _is_path(f) and not hasattr(f, "write"):
        return _C.save(obj, f, metadata)  # kiln's argument error for `path`
    path = os.fspath(f) if _is_path(f) else None
    if metadata is not None or (path is not None and path.endswith(".safetensors")):
        if path is None:
            raise TypeError("save(): a safetensors file is written to a path (a str), not to a file object")
        return _C.save(obj, path, metadata)
    import tempfile
    if not _use_new_zipfile_serialization:
        raise _C.Error("save(): kiln writes PyTorch's zip format only, not its legacy format "
                       "(_use_new_zipfile_serialization=False)")
    if path is None:
        _write_zip(obj, f)
        return None
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".kiln-save-")
    try:
        with os.fdopen(fd, "wb") as out:
            _write_zip(obj, out)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, with_metadata=False,
         **pickle_load_args):
    """Reads what kiln.save or torch.save wrote, deciding by the file's content.

    A safetensors file gives its dict of tensors (copied into memory the tensors own; mmap=True maps
    the file instead; with_metadata=True also returns its metadata). A PyTorch zip checkpoint gives
    the pickled object with kiln tensors in it; weights_only=True (the default, as in torch) refuses
    globals other than tensors, containers, dtypes and devices. map_location may be None, 'cpu', a
    dict or a callable: kiln loads every tensor onto the CPU. A damaged or truncated file raises a
    kiln.Error saying what is wrong."""
    if isinstance(map_location, bool):  # kiln.load(path, True): with_metadata, positional before map_location
        map_location, with_metadata = None, map_location
    if not _is_path(f) and not hasattr(f, "read"):
        return _C.load(f, with_metadata, mmap=bool(mmap))  # kiln's argument error for `path`
    import tempfile
    import zipfile
    _check_map_location(map_location)
    if weights_only is None:
        weights_only = pickle_module is None
    path = os.fspath(f) if _is_path(f) else None
    name = repr(path) if path is not None else "the file object"
    if path is not None:
        if path.endswith(".safetensors") and not os.path.isfile(path):
            return _C.load(path, with_metadata, mmap=bool(mmap))  # its kiln.Error, as before
        with open(path, "rb") as fh:  # other paths: OSError, as torch.load
            head = fh.read(16)
    else:
        start = f.tell()
        head = f.read(16)
        f.seek(start)
    if head[:4] in _ZIP_MAGIC:
        try:
            with zipfile.ZipFile(path if path is not None else f) as zf:
                return _read_zip(zf, name, map_location, weights_only)
        except UnpicklingError:
            raise
        except (_Corrupt, zipfile.BadZipFile, EOFError, pickle.UnpicklingError, OSError, ValueError) as e:
            why = "the zip directory at its end is missing" if str(e) == "File is not a zip file" else str(e)
            raise _C.Error(f"load(): {name} is not a readable checkpoint: {why}\n"
                           f"  hint: the file may be truncated or damaged; write it again") from None
    if (len(head) >= 9 and head[8:9] == b"{") or (path is not None and path.endswith(".safetensors")):
        if path is None:  # kiln's safetensors reader reads files: copy the stream into one
            with tempfile.NamedTemporaryFile(suffix=".safetensors") as tmp:
                tmp.write(f.read())
                tmp.flush()
                return _C.load(tmp.name, with_metadata, mmap=False)
        return _C.load(path, with_metadata, mmap=bool(mmap))
    if not head:
        raise _C.Error(f"load(): {name} is empty")
    if head[:1] == b"\x80":
        raise _C.Error(f"load(): {name} is a pickle without PyTorch's zip container (torch's legacy format, or a "
                       f"plain pickle), which kiln does not read\n"
                       f"  hint: save it again with torch.save (PyTorch >= 1.6 writes the zip format)")
    raise _C.Error(f"load(): {name} is neither a PyTorch checkpoint (a zip archive) nor a safetensors file "
                   f"(it starts with {head[:8]!r})")


_install_pickling()
