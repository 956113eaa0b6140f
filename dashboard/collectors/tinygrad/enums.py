"""Value -> name of tinygrad's pickled enums per release: made by tools/tinygrad_enums.py, do not edit.

A VIZ pickle stores `Ops(33)`, never `Ops.ADD`; these tables come from each release's source.
"""

from __future__ import annotations

# release -> enum -> value -> member name; newest release first.
RELEASES: dict[str, dict[str, dict[int, str]]] = {
    "0.14.0": {
        "Ops": {
            1: "SPECIAL", 2: "BUFFER", 3: "NOOP", 4: "REWRITE_ERROR", 5: "PARAM", 6: "FUNCTION", 7: "CALL",
            8: "PROGRAM", 9: "LINEAR", 10: "SOURCE", 11: "BINARY", 12: "SINK", 13: "AFTER", 14: "GROUP",
            15: "STACK", 16: "TUPLE", 17: "GETTUPLE", 18: "GETADDR", 19: "INDEX", 20: "SHRINK", 21: "LOAD",
            22: "STORE", 23: "WMMA", 24: "CAST", 25: "BITCAST", 26: "EXP2", 27: "LOG2", 28: "SIN", 29: "SQRT",
            30: "RECIPROCAL", 31: "NEG", 32: "TRUNC", 33: "ADD", 34: "MUL", 35: "SHL", 36: "SHR", 37: "CDIV",
            38: "MAX", 39: "CMOD", 40: "CMPLT", 41: "CMPNE", 42: "CMPEQ", 43: "XOR", 44: "OR", 45: "AND",
            46: "THREEFRY", 47: "SUB", 48: "FDIV", 49: "POW", 50: "FLOORDIV", 51: "FLOORMOD", 52: "WHERE",
            53: "MULACC", 54: "BARRIER", 55: "RANGE", 56: "IF", 57: "END", 58: "ENDIF", 59: "CONST", 60: "CUSTOM",
            61: "CUSTOMI", 62: "INS", 63: "CONTIGUOUS", 64: "CONTIGUOUS_BACKWARD", 65: "DETACH", 66: "STAGE",
            67: "COPY", 68: "MSELECT", 69: "MSTACK", 70: "CUSTOM_FUNCTION", 71: "RESHAPE", 72: "PERMUTE",
            73: "EXPAND", 74: "PAD", 75: "FLIP", 76: "UNSHARD", 77: "REDUCE", 78: "ALLREDUCE", 79: "PYLITERAL",
        },
        "AxisType": {
            1: "DEVICE", 2: "GLOBAL", 3: "WARP", 4: "LOCAL", 5: "WEAK", 6: "GROUP_REDUCE", 7: "REDUCE", 8: "UPCAST",
            9: "UNROLL", 10: "THREAD", 11: "PLACEHOLDER", 12: "LOOP",
        },
        "OptOps": {
            1: "TC", 2: "UPCAST", 3: "UNROLL", 4: "LOCAL", 5: "THREAD", 6: "GROUP", 7: "GROUPTOP", 8: "NOLOCALS",
            9: "PADTO", 10: "SWAP",
        },
        "AddrSpace": {
            1: "GLOBAL", 2: "LOCAL", 3: "REG", 4: "ALU",
        },
    },
    "0.13.0": {
        "Ops": {
            1: "DEFINE_VAR", 2: "BIND", 3: "SPECIAL", 4: "DEFINE_LOCAL", 5: "DEFINE_REG", 6: "NOOP",
            7: "REWRITE_ERROR", 8: "PARAM", 9: "FUNCTION", 10: "CALL", 11: "PROGRAM", 12: "LINEAR", 13: "SOURCE",
            14: "BINARY", 15: "SINK", 16: "AFTER", 17: "GROUP", 18: "GEP", 19: "STACK", 20: "TUPLE", 21: "GETTUPLE",
            22: "GETADDR", 23: "INDEX", 24: "LOAD", 25: "STORE", 26: "WMMA", 27: "SHAPED_WMMA", 28: "CAST",
            29: "BITCAST", 30: "EXP2", 31: "LOG2", 32: "SIN", 33: "SQRT", 34: "RECIPROCAL", 35: "NEG", 36: "TRUNC",
            37: "ADD", 38: "MUL", 39: "SHL", 40: "SHR", 41: "CDIV", 42: "MAX", 43: "CMOD", 44: "CMPLT", 45: "CMPNE",
            46: "CMPEQ", 47: "XOR", 48: "OR", 49: "AND", 50: "THREEFRY", 51: "SUB", 52: "FDIV", 53: "POW",
            54: "FLOORDIV", 55: "FLOORMOD", 56: "WHERE", 57: "MULACC", 58: "BARRIER", 59: "RANGE", 60: "IF",
            61: "END", 62: "ENDIF", 63: "WAIT", 64: "CONST", 65: "CUSTOM", 66: "CUSTOMI", 67: "INS", 68: "UNIQUE",
            69: "DEVICE", 70: "LUNIQUE", 71: "CONTIGUOUS", 72: "CONTIGUOUS_BACKWARD", 73: "DETACH", 74: "STAGE",
            75: "COPY", 76: "BUFFER", 77: "BUFFER_VIEW", 78: "MSELECT", 79: "MSTACK", 80: "CUSTOM_FUNCTION",
            81: "RESHAPE", 82: "PERMUTE", 83: "EXPAND", 84: "PAD", 85: "SHRINK", 86: "FLIP", 87: "MULTI",
            88: "REDUCE", 89: "ALLREDUCE", 90: "UNROLL", 91: "CONTRACT", 92: "VCAT", 93: "PTRCAT",
        },
        "AxisType": {
            1: "GLOBAL", 2: "WARP", 3: "LOCAL", 4: "LOOP", 5: "GROUP_REDUCE", 6: "REDUCE", 7: "UPCAST", 8: "UNROLL",
            9: "THREAD", 10: "PLACEHOLDER",
        },
        "OptOps": {
            1: "TC", 2: "UPCAST", 3: "UNROLL", 4: "LOCAL", 5: "THREAD", 6: "GROUP", 7: "GROUPTOP", 8: "NOLOCALS",
            9: "PADTO", 10: "SWAP",
        },
        "AddrSpace": {
            1: "GLOBAL", 2: "LOCAL", 3: "REG",
        },
    },
    "0.12.0": {
        "Ops": {
            1: "DEFINE_GLOBAL", 2: "DEFINE_VAR", 3: "BIND", 4: "SPECIAL", 5: "DEFINE_LOCAL", 6: "DEFINE_REG",
            7: "NOOP", 8: "REWRITE_ERROR", 9: "PROGRAM", 10: "LINEAR", 11: "SOURCE", 12: "BINARY", 13: "SINK",
            14: "AFTER", 15: "GROUP", 16: "GEP", 17: "VECTORIZE", 18: "INDEX", 19: "LOAD", 20: "STORE", 21: "WMMA",
            22: "CAST", 23: "BITCAST", 24: "EXP2", 25: "LOG2", 26: "SIN", 27: "SQRT", 28: "RECIPROCAL", 29: "NEG",
            30: "TRUNC", 31: "ADD", 32: "MUL", 33: "SHL", 34: "SHR", 35: "IDIV", 36: "MAX", 37: "MOD", 38: "CMPLT",
            39: "CMPNE", 40: "CMPEQ", 41: "XOR", 42: "OR", 43: "AND", 44: "THREEFRY", 45: "SUB", 46: "FDIV",
            47: "POW", 48: "WHERE", 49: "MULACC", 50: "BARRIER", 51: "RANGE", 52: "IF", 53: "END", 54: "ENDIF",
            55: "VCONST", 56: "CONST", 57: "CUSTOM", 58: "CUSTOMI", 59: "UNIQUE", 60: "DEVICE", 61: "KERNEL",
            62: "ASSIGN", 63: "CUSTOM_KERNEL", 64: "LUNIQUE", 65: "CONTIGUOUS", 66: "CONTIGUOUS_BACKWARD",
            67: "DETACH", 68: "BUFFERIZE", 69: "COPY", 70: "BUFFER", 71: "BUFFER_VIEW", 72: "MSELECT", 73: "MSTACK",
            74: "ENCDEC", 75: "RESHAPE", 76: "PERMUTE", 77: "EXPAND", 78: "PAD", 79: "SHRINK", 80: "FLIP",
            81: "MULTI", 82: "REDUCE_AXIS", 83: "REDUCE", 84: "ALLREDUCE", 85: "UNROLL", 86: "CONTRACT", 87: "CAT",
            88: "PTRCAT",
        },
        "AxisType": {
            1: "GLOBAL", 2: "WARP", 3: "LOCAL", 4: "LOOP", 5: "GROUP_REDUCE", 6: "REDUCE", 7: "UPCAST", 8: "UNROLL",
            9: "THREAD", 10: "OUTER", 11: "PLACEHOLDER",
        },
        "OptOps": {
            1: "TC", 2: "UPCAST", 3: "UNROLL", 4: "LOCAL", 5: "THREAD", 6: "GROUP", 7: "GROUPTOP", 8: "NOLOCALS",
            9: "PADTO", 10: "SWAP",
        },
        "AddrSpace": {
            1: "GLOBAL", 2: "LOCAL", 3: "REG",
        },
    },
}
