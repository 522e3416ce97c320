#!/usr/bin/env python3
"""Check configs/bridge/defaults.json against the dataclass defaults Python itself resolves.

Imports the pinned Bridge / Megatron-LM sources under bridge_stubs.py (no torch) and compares, for every
provider class and every memory-relevant section in defaults.json, the default of every field as
dataclasses.fields() gives it with the value defaults.json gives by its documented rule (nearest declaring
class in the MRO, then the 'shadowed' exceptions). Literal defaults must be equal; {"expr": ...} defaults
are compared exactly for torch dtypes and by member name for enums; other expressions (callables,
factories) are not compared.

Usage: check_defaults_against_dataclasses.py BRIDGE_GIT_DIR MEGATRON_LM_GIT_DIR configs/bridge/defaults.json
"""
import os, sys, tempfile, shutil
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from generate_fixtures import export, BRIDGE_REV, MCORE_REV  # noqa: E402
_tmp = tempfile.mkdtemp(prefix="bridge-check-")
export(os.path.abspath(sys.argv[1]), BRIDGE_REV, "src", os.path.join(_tmp, "bridge"))
export(os.path.abspath(sys.argv[2]), MCORE_REV, "megatron", os.path.join(_tmp, "mlm"))
sys.path[:0] = [os.path.join(_tmp, "bridge", "src"), os.path.join(_tmp, "mlm")]
DEFAULTS = sys.argv[3]
import json, dataclasses, importlib, enum, functools
import bridge_stubs; bridge_stubs.install()
import logging, warnings; logging.disable(logging.CRITICAL); warnings.simplefilter("ignore")
d=json.load(open(DEFAULTS))
def load(q):
    m,_,n=q.rpartition('.'); return getattr(importlib.import_module(m), n)
def norm(v):
    if type(v).__name__=='dtype': return {'expr': str(v)}
    if isinstance(v, tuple): return list(v)
    return v
def realdefault(f):
    if f.default is not dataclasses.MISSING: return norm(f.default)
    if f.default_factory is not dataclasses.MISSING:
        try: return norm(f.default_factory())
        except Exception as e: return ('factory-error', str(e))
    return {'required': True}
bad=0; checked=0
def cmp(q, name, ext, real):
    global bad, checked
    checked+=1
    if isinstance(ext, dict) and 'expr' in ext:
        # compare exprs loosely: enums, callables, dtypes
        r = real
        ok = True
        if isinstance(r, dict) and 'expr' in r: ok = (r['expr']==ext['expr'])
        elif isinstance(r, enum.Enum): ok = ext['expr'].endswith(f"{type(r).__name__}.{r.name}") or ext['expr'].endswith('.'+r.name)
        elif callable(r) and hasattr(r,'__name__'): ok = ext['expr'].split('.')[-1].rstrip('()') in (r.__name__, ) or True
        else: ok = (str(r) in ext['expr']) or True
        if not ok: bad+=1; print('EXPR?', q, name, ext, r)
        return
    if ext != real:
        bad+=1; print('DIFF', q, name, 'ext=',ext, 'real=',real)
def effective(entry, q, allc):
    # naive rule: nearest declaring class in MRO, then shadowed exceptions
    out={}
    for c in reversed(entry['mro']):
        src = allc.get(c)
        if not src: continue
        for n,fe in src['fields'].items():
            out[n]=fe['default']
    # nearest declaring wins -> iterate reversed so nearest last
    for n,s in entry.get('shadowed',{}).items(): out[n]=s['effective_default']
    return out
allc={}
allc.update(d['providers'])
for q,e in d['base_classes'].items():
    allc[q]={'fields':{n:v for n,v in e['fields'].items() if v['declared_in']==q}}
for q,e in d['providers'].items():
    try: C=load(q)
    except Exception as ex: print('LOADFAIL',q,ex); continue
    real={f.name: realdefault(f) for f in dataclasses.fields(C)}
    eff=effective(e,q,allc)
    for n,r in real.items():
        if n.startswith('_'): continue
        if n not in eff: bad+=1; print('MISSING', q, n); continue
        cmp(q,n,eff[n],r)
for key,s in d['sections'].items():
    if 'fields' not in s: continue
    C=load(s['class'])
    real={f.name: realdefault(f) for f in dataclasses.fields(C)}
    for n,r in real.items():
        if n.startswith('_'): continue
        if n not in s['fields']: bad+=1; print('MISSING', key, n); continue
        cmp(key,n,s['fields'][n]['default'],r)
    extra=set(s['fields'])-set(real)
    if extra: print('EXTRA', key, extra)
print('checked', checked, 'bad', bad)
shutil.rmtree(_tmp)
sys.exit(1 if bad else 0)
