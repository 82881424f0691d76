"""The fused native decode (native/src/predictor.hpp): the code predictor's whole frame in one call.

tensors.py finds the bundle's tensors in the code-predictor graph, predictor.py is the ctypes binding,
code_predictor.py builds one for the loader (which falls back to the plugin's graph, with one log line,
when it cannot). Whether it is tried is runtime/native_plan.py's `choose_fused_code_predictor`.
"""
