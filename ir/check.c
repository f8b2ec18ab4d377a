/* Checker: types and shapes the statement trees and builds the IR.
 *
 * Typing is two passes over each expression.  The first (infer) resolves
 * names and decides, bottom up, whether a subtree is strongly typed (it
 * touches a buffer, scalar, r, c, a named value or a cast) or weak (only
 * literals and dims).  The second (emit) builds the nodes top down, handing
 * each weak subtree the dtype of the strong operand it meets, or of the
 * output it is stored into, or else the kernel's float type.  So after
 * checking every node has one concrete dtype.
 *
 * Nodes are hash-consed: identical (op, dtype, operands, attributes) give
 * the same node.  That keeps the printer honest -- an unnamed shared
 * subexpression printed inline twice re-parses to the one node -- and gives
 * the backend CSE for free.
 *
 * Finally the nodes are renumbered in a canonical order (postorder from the
 * stores, in store order, then from unused named values), which depends on
 * the DAG and the store order only, not on how the source ordered its
 * statements.  The printer relies on that for its round trip.  Then the
 * phase facts are computed: a reduction finishes a column loop, so what
 * depends on it runs in a later loop; a named tile used in a later loop than
 * its own is a snapshot candidate. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/frontend.h"

enum { ENT_PARAM = 1, ENT_SYM, ENT_VALUE };

typedef struct ent {
  const char *name;
  int kind, idx;
  lm_loc loc;
} ent;

typedef struct ck {
  lm_fe *fe;
  lm_kernel *k;
  ent *env; /* open addressing, power-of-two capacity */
  int envcap, envn;
  lm_node *nodes;
  int nn, capn;
  int *htab; /* node id + 1, 0 empty */
  int hcap;
  lm_store *stores;
  int ns, caps;
  int have_ncols;
  lm_dim ncols;
  lm_loc ncols_loc;
  int any_tile;
} ck;

static _Noreturn void fail(ck *c, lm_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static _Noreturn void fail(ck *c, lm_loc loc, const char *fmt, ...) {
  char msg[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lm_fe_fail(c->fe, loc, "%s", msg);
}

/* ---- names ------------------------------------------------------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static ent *env_find(ck *c, const char *name) {
  uint64_t m = (uint64_t)c->envcap - 1;
  for (uint64_t i = hash_str(name) & m;; i = (i + 1) & m) {
    if (!c->env[i].name)
      return NULL;
    if (!strcmp(c->env[i].name, name))
      return &c->env[i];
  }
}

static void env_add(ck *c, const char *name, int kind, int idx, lm_loc loc) {
  if (2 * (c->envn + 1) > c->envcap) {
    ent *old = c->env;
    int oldcap = c->envcap;
    c->envcap = oldcap ? oldcap * 2 : 64;
    c->env = lm_arena_alloc(c->fe->arena, (size_t)c->envcap * sizeof *c->env);
    c->envn = 0;
    for (int i = 0; i < oldcap; i++)
      if (old[i].name)
        env_add(c, old[i].name, old[i].kind, old[i].idx, old[i].loc);
  }
  uint64_t m = (uint64_t)c->envcap - 1;
  uint64_t i = hash_str(name) & m;
  while (c->env[i].name)
    i = (i + 1) & m;
  c->env[i] = (ent){name, kind, idx, loc};
  c->envn++;
}

/* ---- nodes ------------------------------------------------------------- */

static uint64_t hash_node(const lm_node *n) {
  uint64_t imm;
  memcpy(&imm, &n->imm, sizeof imm);
  uint64_t v[] = {(uint64_t)n->op,
                  (uint64_t)n->dtype,
                  (uint64_t)n->tile,
                  (uint64_t)n->a,
                  (uint64_t)n->b,
                  (uint64_t)n->c,
                  imm,
                  (uint64_t)n->ipow,
                  (uint64_t)n->param,
                  (uint64_t)n->sym,
                  (uint64_t)n->coef,
                  (uint64_t)n->start,
                  (uint64_t)n->step};
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    h = (h ^ v[i]) * 1099511628211ull, h ^= h >> 29;
  return h;
}

static int same_node(const lm_node *x, const lm_node *y) {
  return x->op == y->op && x->dtype == y->dtype && x->tile == y->tile &&
         x->a == y->a && x->b == y->b && x->c == y->c &&
         !memcmp(&x->imm, &y->imm, sizeof x->imm) && x->ipow == y->ipow &&
         x->param == y->param && x->sym == y->sym && x->coef == y->coef &&
         x->start == y->start && x->step == y->step;
}

static void htab_put(ck *c, int id) {
  uint64_t m = (uint64_t)c->hcap - 1;
  uint64_t i = hash_node(&c->nodes[id]) & m;
  while (c->htab[i])
    i = (i + 1) & m;
  c->htab[i] = id + 1;
}

/* The node equal to *n, created if new. */
static int intern(ck *c, lm_node *n) {
  if (c->hcap) {
    uint64_t m = (uint64_t)c->hcap - 1;
    for (uint64_t i = hash_node(n) & m; c->htab[i]; i = (i + 1) & m)
      if (same_node(&c->nodes[c->htab[i] - 1], n))
        return c->htab[i] - 1;
  }
  if (c->nn == c->capn)
    c->nodes = lm_fe_grow(c->fe, c->nodes, c->nn, &c->capn, sizeof *c->nodes);
  int id = c->nn++;
  c->nodes[id] = *n;
  if (2 * c->nn > c->hcap) {
    c->hcap = c->hcap ? c->hcap * 2 : 256;
    c->htab = lm_arena_alloc(c->fe->arena, (size_t)c->hcap * sizeof *c->htab);
    for (int i = 0; i < c->nn; i++)
      htab_put(c, i);
  } else {
    htab_put(c, id);
  }
  return id;
}

static lm_node node0(lm_op op, lm_dtype t, lm_loc loc) {
  lm_node n;
  memset(&n, 0, sizeof n);
  n.op = op;
  n.dtype = t;
  n.a = n.b = n.c = -1;
  n.param = -1;
  n.sym = -1;
  n.loc = loc;
  return n;
}

static int mk_op(ck *c, lm_op op, lm_dtype t, lm_loc loc, int a, int b,
                 int cc) {
  lm_node n = node0(op, t, loc);
  n.a = a;
  n.b = b;
  n.c = cc;
  int ops[3] = {a, b, cc};
  for (int i = 0; i < 3; i++)
    if (ops[i] >= 0 && c->nodes[ops[i]].tile)
      n.tile = 1;
  if (op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN)
    n.tile = 0;
  return intern(c, &n);
}

/* ---- shapes ------------------------------------------------------------ */

static const char *dim_str(ck *c, lm_dim d) {
  char *buf = lm_arena_alloc(c->fe->arena, 48);
  lm_fe_dim_str(c->k, d, buf, 48);
  return buf;
}

static const char *view_str(ck *c, int start, int step) {
  char *buf = lm_arena_alloc(c->fe->arena, 32);
  if (step == 1)
    snprintf(buf, 32, ":");
  else
    snprintf(buf, 32, "%d::%d", start, step);
  return buf;
}

/* Length of the view start::step of dim d of buffer `buf`. */
static lm_dim view_len(ck *c, lm_loc loc, lm_dim d, int step, const char *buf) {
  if (d.coef % step != 0) {
    if (d.sym < 0)
      fail(c, loc,
           "bad stride: %lld columns of '%s' do not split into steps "
           "of %d",
           (long long)d.coef, buf, step);
    if (d.coef == 1)
      fail(c, loc,
           "bad stride: dim %s of '%s' is not a multiple of the step "
           "%d (declare the dim as %d*H, with H a new symbol)",
           dim_str(c, d), buf, step, step);
    fail(c, loc, "bad stride: dim %s of '%s' is not a multiple of the step %d",
         dim_str(c, d), buf, step);
  }
  d.coef /= step;
  return d;
}

/* Every tile of a kernel has one length, the column domain. */
static void tile_len(ck *c, lm_loc loc, lm_dim d) {
  if (!c->have_ncols) {
    c->have_ncols = 1;
    c->ncols = d;
    c->ncols_loc = loc;
    return;
  }
  if (d.sym != c->ncols.sym || d.coef != c->ncols.coef)
    fail(c, loc,
         "shape mismatch: tile of length %s vs %s (the kernel's column "
         "domain, set at %d:%d)",
         dim_str(c, d), dim_str(c, c->ncols), c->ncols_loc.line,
         c->ncols_loc.col);
}

/* ---- typing ------------------------------------------------------------ */

static const char *op_text(lm_tok_kind k) {
  switch (k) {
  case TK_PLUS:
    return "+";
  case TK_MINUS:
    return "-";
  case TK_STAR:
    return "*";
  case TK_SLASH:
    return "/";
  case TK_EQ:
    return "==";
  case TK_NE:
    return "!=";
  case TK_LT:
    return "<";
  case TK_LE:
    return "<=";
  case TK_GT:
    return ">";
  case TK_GE:
    return ">=";
  case TK_AND:
    return "&&";
  case TK_OR:
    return "||";
  case TK_NOT:
    return "!";
  default:
    return "?";
  }
}

static const char *type_str(const lm_ast *e) {
  if (e->strong)
    return lm_dtype_name(e->dtype);
  return e->wfloat ? "a float literal" : "an integer literal";
}

static int is_float(lm_dtype t) { return t == LM_F32 || t == LM_F64; }

static void need_num(ck *c, const lm_ast *e, const char *what) {
  if (e->strong && e->dtype == LM_BOOL)
    fail(c, e->loc, "%s needs numbers, got bool", what);
}

static void need_bool(ck *c, const lm_ast *e, const char *what) {
  if (!e->strong || e->dtype != LM_BOOL)
    fail(c, e->loc, "%s needs bool, got %s", what, type_str(e));
}

/* Combine the types of two numeric operands into e. */
static void unify(ck *c, lm_ast *e, lm_loc loc, const lm_ast *a,
                  const lm_ast *b) {
  e->tile = a->tile || b->tile;
  if (a->strong && b->strong) {
    if (a->dtype != b->dtype)
      fail(c, loc, "dtype mismatch: %s and %s%s", lm_dtype_name(a->dtype),
           lm_dtype_name(b->dtype),
           (a->dtype == LM_I32 || b->dtype == LM_I32)
               ? " (convert one side with a cast such as f32(...))"
               : "");
    e->strong = 1;
    e->dtype = a->dtype;
    return;
  }
  if (a->strong || b->strong) {
    const lm_ast *s = a->strong ? a : b, *w = a->strong ? b : a;
    if (s->dtype == LM_I32 && w->wfloat)
      fail(c, loc,
           "dtype mismatch: i32 and a float value (convert with a "
           "cast such as f32(...))");
    e->strong = 1;
    e->dtype = s->dtype;
    return;
  }
  e->strong = 0;
  e->wfloat = a->wfloat || b->wfloat;
}

static void need_float(ck *c, lm_ast *e, lm_loc loc, const char *what) {
  if (e->strong && !is_float(e->dtype))
    fail(c, loc, "%s needs float operands, got %s", what,
         lm_dtype_name(e->dtype));
  if (!e->strong)
    e->wfloat = 1;
}

typedef enum fn_kind {
  FN_NONE,
  FN_REDUCE_OR_MINMAX,
  FN_FMA,
  FN_WHERE,
  FN_ELEM1, /* abs neg: any number */
  FN_MATH1, /* floats only */
  FN_POW,
  FN_CAST,
} fn_kind;

typedef struct fn_info {
  const char *name;
  fn_kind kind;
  lm_op op;  /* the elementwise op (or reduction for sum) */
  lm_op rop; /* reduction op */
  lm_dtype cast;
} fn_info;

static const fn_info functions[] = {
    {"sum", FN_REDUCE_OR_MINMAX, LM_OP__COUNT, LM_OP_RSUM, 0},
    {"max", FN_REDUCE_OR_MINMAX, LM_OP_MAX, LM_OP_RMAX, 0},
    {"min", FN_REDUCE_OR_MINMAX, LM_OP_MIN, LM_OP_RMIN, 0},
    {"fma", FN_FMA, LM_OP_FMA, 0, 0},
    {"where", FN_WHERE, LM_OP_WHERE, 0, 0},
    {"abs", FN_ELEM1, LM_OP_ABS, 0, 0},
    {"neg", FN_ELEM1, LM_OP_NEG, 0, 0},
    {"exp", FN_MATH1, LM_OP_EXP, 0, 0},
    {"log", FN_MATH1, LM_OP_LOG, 0, 0},
    {"sqrt", FN_MATH1, LM_OP_SQRT, 0, 0},
    {"rsqrt", FN_MATH1, LM_OP_RSQRT, 0, 0},
    {"tanh", FN_MATH1, LM_OP_TANH, 0, 0},
    {"erf", FN_MATH1, LM_OP_ERF, 0, 0},
    {"sigmoid", FN_MATH1, LM_OP_SIGMOID, 0, 0},
    {"sin", FN_MATH1, LM_OP_SIN, 0, 0},
    {"cos", FN_MATH1, LM_OP_COS, 0, 0},
    {"pow", FN_POW, LM_OP_POWI, 0, 0},
    {"f32", FN_CAST, LM_OP_CAST, 0, LM_F32},
    {"f64", FN_CAST, LM_OP_CAST, 0, LM_F64},
    {"i32", FN_CAST, LM_OP_CAST, 0, LM_I32},
};

static const fn_info *find_fn(const char *name) {
  for (size_t i = 0; i < sizeof functions / sizeof *functions; i++)
    if (!strcmp(functions[i].name, name))
      return &functions[i];
  return NULL;
}

static void nargs_is(ck *c, const lm_ast *e, int n) {
  if (e->nargs != n)
    fail(c, e->loc, "%s takes %d argument%s, got %d", e->name, n,
         n == 1 ? "" : "s", e->nargs);
}

/* pow's exponent: an integer literal, possibly negated. */
static int pow_exponent(ck *c, const lm_ast *x, lm_loc loc) {
  int neg = 0;
  if (x->kind == AST_UNARY && x->op == TK_MINUS) {
    neg = 1;
    x = x->arg[0];
  }
  if (x->kind != AST_NUM || !x->num_int)
    fail(c, loc, "pow exponent must be an integer literal, as in pow(x, 3)");
  if (x->num > 1e6)
    fail(c, loc, "pow exponent %s%.17g is too large (at most 1000000 in magnitude)", neg ? "-" : "", x->num);
  return neg ? -(int)x->num : (int)x->num;
}

static void infer(ck *c, lm_ast *e);

static void infer_name(ck *c, lm_ast *e) {
  if (!strcmp(e->name, "r")) {
    e->strong = 1, e->dtype = LM_I32, e->tile = 0;
    return;
  }
  if (!strcmp(e->name, "c")) {
    e->strong = 1, e->dtype = LM_I32, e->tile = 1;
    c->any_tile = 1;
    return;
  }
  ent *x = env_find(c, e->name);
  if (!x) {
    if (find_fn(e->name))
      fail(c, e->loc, "'%s' is a function; call it as %s(...)", e->name,
           e->name);
    fail(c, e->loc, "unknown name '%s'", e->name);
  }
  if (x->kind == ENT_SYM) {
    e->strong = 0, e->wfloat = 0, e->tile = 0;
    return;
  }
  if (x->kind == ENT_VALUE) {
    const lm_node *n = &c->nodes[x->idx];
    e->strong = 1, e->dtype = n->dtype, e->tile = n->tile;
    return;
  }
  const lm_param *p = &c->k->params[x->idx];
  if (p->is_output)
    fail(c, e->loc, "cannot read output '%s' (outputs are write-only)",
         p->name);
  if (p->kind == LM_PARAM_BUFFER) {
    if (p->rank == 2)
      fail(c, e->loc, "buffer '%s' must be indexed, as in %s[r, :]", p->name,
           p->name);
    if (p->dims[0].sym == 0)
      fail(c, e->loc, "buffer '%s' must be indexed, as in %s[r]", p->name,
           p->name);
    fail(c, e->loc, "buffer '%s' must be indexed, as in %s[:]", p->name,
         p->name);
  }
  e->strong = 1, e->dtype = p->dtype, e->tile = 0;
}

static void infer_index(ck *c, lm_ast *e) {
  ent *x = env_find(c, e->name);
  if (!x) {
    if (!strcmp(e->name, "r") || !strcmp(e->name, "c") || find_fn(e->name))
      fail(c, e->loc, "'%s' cannot be indexed; only buffer parameters can",
           e->name);
    fail(c, e->loc, "unknown name '%s'", e->name);
  }
  if (x->kind == ENT_VALUE)
    fail(c, e->loc,
         "'%s' is a value, not a buffer; only buffer parameters "
         "can be indexed",
         e->name);
  if (x->kind == ENT_SYM)
    fail(c, e->loc, "'%s' is a dim and cannot be indexed", e->name);
  const lm_param *p = &c->k->params[x->idx];
  if (p->kind == LM_PARAM_SCALAR)
    fail(c, e->loc, "'%s' is a scalar and cannot be indexed", p->name);
  if (p->is_output)
    fail(c, e->loc, "cannot read output '%s' (outputs are write-only)",
         p->name);
  e->strong = 1;
  e->dtype = p->dtype;
  if (p->rank == 2) {
    if (!e->ix_row || !e->ix_view)
      fail(c, e->loc, "'%s' is 2-D: read a row as %s[r, :] or %s[r, S::T]",
           p->name, p->name, p->name);
    tile_len(c, e->view_loc,
             view_len(c, e->view_loc, p->dims[1], e->step, p->name));
    e->tile = 1;
  } else if (p->dims[0].sym == 0) {
    if (!e->ix_row || e->ix_view)
      fail(c, e->loc, "'%s' is per-row [R]: read it as %s[r]", p->name,
           p->name);
    e->tile = 0;
  } else {
    if (e->ix_row)
      fail(c, e->loc, "'%s' is per-column: read it as %s[:] or %s[S::T]",
           p->name, p->name, p->name);
    tile_len(c, e->view_loc,
             view_len(c, e->view_loc, p->dims[0], e->step, p->name));
    e->tile = 1;
  }
  c->any_tile |= e->tile;
}

static void infer_call(ck *c, lm_ast *e) {
  const fn_info *f = find_fn(e->name);
  if (!f) {
    ent *x = env_find(c, e->name);
    if (x || !strcmp(e->name, "r") || !strcmp(e->name, "c"))
      fail(c, e->loc, "'%s' is not a function", e->name);
    fail(c, e->loc, "unknown function '%s'", e->name);
  }
  int n = e->nargs < 3 ? e->nargs : 3;
  for (int i = 0; i < n; i++)
    infer(c, e->arg[i]);
  lm_ast *a = e->arg[0], *b = e->arg[1];
  switch (f->kind) {
  case FN_REDUCE_OR_MINMAX:
    if (e->nargs == 1) {
      if (!a->tile)
        fail(c, e->loc, "reduction of a scalar: %s needs a tile argument",
             e->name);
      need_num(c, a, e->name);
      if (!is_float(a->dtype))
        fail(c, e->loc, "%s needs a float tile, got %s", e->name,
             lm_dtype_name(a->dtype));
      e->strong = 1, e->dtype = a->dtype, e->tile = 0;
      return;
    }
    if (f->op == LM_OP__COUNT)
      nargs_is(c, e, 1);
    if (e->nargs != 2)
      fail(c, e->loc, "%s takes 1 or 2 arguments, got %d", e->name, e->nargs);
    need_num(c, a, e->name);
    need_num(c, b, e->name);
    unify(c, e, e->loc, a, b);
    return;
  case FN_FMA:
    nargs_is(c, e, 3);
    for (int i = 0; i < 3; i++)
      need_num(c, e->arg[i], "fma");
    unify(c, e, e->loc, a, b);
    {
      lm_ast ab = *e;
      unify(c, e, e->loc, &ab, e->arg[2]);
    }
    need_float(c, e, e->loc, "fma");
    return;
  case FN_WHERE:
    nargs_is(c, e, 3);
    if (!a->strong || a->dtype != LM_BOOL)
      fail(c, e->argloc[0], "where condition must be bool, got %s",
           type_str(a));
    need_num(c, b, "where");
    need_num(c, e->arg[2], "where");
    unify(c, e, e->loc, b, e->arg[2]);
    e->tile |= a->tile;
    return;
  case FN_ELEM1:
  case FN_MATH1:
    nargs_is(c, e, 1);
    need_num(c, a, e->name);
    e->strong = a->strong, e->dtype = a->dtype, e->wfloat = a->wfloat;
    e->tile = a->tile;
    if (f->kind == FN_MATH1)
      need_float(c, e, e->loc, e->name);
    return;
  case FN_POW:
    nargs_is(c, e, 2);
    need_num(c, a, "pow");
    pow_exponent(c, b, e->argloc[1]);
    e->strong = a->strong, e->dtype = a->dtype, e->wfloat = a->wfloat;
    e->tile = a->tile;
    need_float(c, e, e->loc, "pow");
    return;
  case FN_CAST:
    nargs_is(c, e, 1);
    if (a->strong && a->dtype == LM_BOOL)
      fail(c, e->loc, "cannot cast bool; use where(cond, 1, 0)");
    e->strong = 1, e->dtype = f->cast, e->tile = a->tile;
    return;
  case FN_NONE:
    break;
  }
  abort();
}

/* First pass: names, types and shapes, memoised in the tree. */
static void infer(ck *c, lm_ast *e) {
  switch (e->kind) {
  case AST_NUM:
    e->strong = 0, e->wfloat = e->num_float, e->tile = 0;
    return;
  case AST_NAME:
    infer_name(c, e);
    return;
  case AST_INDEX:
    infer_index(c, e);
    return;
  case AST_CALL:
    infer_call(c, e);
    return;
  case AST_UNARY:
    infer(c, e->arg[0]);
    if (e->op == TK_NOT) {
      need_bool(c, e->arg[0], "'!'");
      e->strong = 1, e->dtype = LM_BOOL;
    } else {
      need_num(c, e->arg[0], "'-'");
      e->strong = e->arg[0]->strong, e->dtype = e->arg[0]->dtype;
      e->wfloat = e->arg[0]->wfloat;
    }
    e->tile = e->arg[0]->tile;
    return;
  case AST_BINARY: {
    lm_ast *a = e->arg[0], *b = e->arg[1];
    infer(c, a);
    infer(c, b);
    char what[16];
    snprintf(what, sizeof what, "'%s'", op_text(e->op));
    if (e->op == TK_AND || e->op == TK_OR) {
      need_bool(c, a, what);
      need_bool(c, b, what);
      e->strong = 1, e->dtype = LM_BOOL, e->tile = a->tile || b->tile;
      return;
    }
    need_num(c, a, what);
    need_num(c, b, what);
    unify(c, e, e->loc, a, b);
    if (e->op == TK_SLASH)
      need_float(c, e, e->loc, "division");
    if (e->op != TK_PLUS && e->op != TK_MINUS && e->op != TK_STAR &&
        e->op != TK_SLASH)
      e->strong = 1, e->dtype = LM_BOOL;
    return;
  }
  }
}

/* ---- building nodes ---------------------------------------------------- */

/* The dtype two operands are computed in: the strong one's, else ctx. */
static lm_dtype operand_type(const lm_ast *a, const lm_ast *b, lm_dtype ctx) {
  if (a->strong)
    return a->dtype;
  if (b && b->strong)
    return b->dtype;
  return ctx;
}

static lm_op binop(lm_tok_kind k) {
  switch (k) {
  case TK_PLUS:
    return LM_OP_ADD;
  case TK_MINUS:
    return LM_OP_SUB;
  case TK_STAR:
    return LM_OP_MUL;
  case TK_SLASH:
    return LM_OP_DIV;
  case TK_EQ:
    return LM_OP_EQ;
  case TK_NE:
    return LM_OP_NE;
  case TK_LT:
    return LM_OP_LT;
  case TK_LE:
    return LM_OP_LE;
  case TK_GT:
    return LM_OP_GT;
  case TK_GE:
    return LM_OP_GE;
  case TK_AND:
    return LM_OP_AND;
  case TK_OR:
    return LM_OP_OR;
  default:
    abort();
  }
}

/* Second pass: build e's nodes; a weak e takes dtype ctx. */
static int emit(ck *c, lm_ast *e, lm_dtype ctx) {
  lm_dtype t = e->strong ? e->dtype : ctx;
  lm_dtype elem = c->k->elem;
  if (!e->strong && e->wfloat && !is_float(ctx))
    fail(c, e->loc,
         "dtype mismatch: a float value where %s is needed (convert "
         "with a cast such as %s(...))",
         lm_dtype_name(ctx), lm_dtype_name(ctx));
  switch (e->kind) {
  case AST_NUM: {
    if (t == LM_I32 && fabs(e->num) > 2147483647.0)
      fail(c, e->loc, "literal %.17g does not fit in i32", e->num);
    lm_node n = node0(LM_OP_CONST, t, e->loc);
    n.imm = e->num;
    return intern(c, &n);
  }
  case AST_NAME: {
    if (!strcmp(e->name, "r")) {
      lm_node n = node0(LM_OP_ROWIDX, LM_I32, e->loc);
      return intern(c, &n);
    }
    if (!strcmp(e->name, "c")) {
      lm_node n = node0(LM_OP_COLIDX, LM_I32, e->loc);
      n.tile = 1;
      return intern(c, &n);
    }
    ent *x = env_find(c, e->name);
    if (x->kind == ENT_VALUE)
      return x->idx;
    if (x->kind == ENT_SYM) {
      lm_node n = node0(LM_OP_DIM, t, e->loc);
      n.sym = x->idx;
      n.coef = 1;
      return intern(c, &n);
    }
    lm_node n = node0(LM_OP_SCALAR, t, e->loc);
    n.param = x->idx;
    return intern(c, &n);
  }
  case AST_INDEX: {
    ent *x = env_find(c, e->name);
    const lm_param *p = &c->k->params[x->idx];
    lm_op op = p->rank == 2          ? LM_OP_LOAD_ROW
               : p->dims[0].sym == 0 ? LM_OP_LOAD_INST
                                     : LM_OP_LOAD_COL;
    lm_node n = node0(op, t, e->loc);
    n.param = x->idx;
    n.tile = op != LM_OP_LOAD_INST;
    if (n.tile) {
      n.start = e->start;
      n.step = e->step;
    }
    return intern(c, &n);
  }
  case AST_UNARY: {
    if (e->op == TK_NOT)
      return mk_op(c, LM_OP_NOT, LM_BOOL, e->loc, emit(c, e->arg[0], LM_BOOL),
                   -1, -1);
    return mk_op(c, LM_OP_NEG, t, e->loc, emit(c, e->arg[0], t), -1, -1);
  }
  case AST_BINARY: {
    lm_ast *a = e->arg[0], *b = e->arg[1];
    lm_op op = binop(e->op);
    if (op == LM_OP_AND || op == LM_OP_OR) {
      int x = emit(c, a, LM_BOOL);
      return mk_op(c, op, LM_BOOL, e->loc, x, emit(c, b, LM_BOOL), -1);
    }
    if (op >= LM_OP_EQ && op <= LM_OP_GE) {
      lm_dtype ot = operand_type(a, b, elem);
      int x = emit(c, a, ot);
      return mk_op(c, op, LM_BOOL, e->loc, x, emit(c, b, ot), -1);
    }
    int x = emit(c, a, t);
    return mk_op(c, op, t, e->loc, x, emit(c, b, t), -1);
  }
  case AST_CALL: {
    const fn_info *f = find_fn(e->name);
    lm_ast *a = e->arg[0];
    switch (f->kind) {
    case FN_REDUCE_OR_MINMAX:
      if (e->nargs == 1)
        return mk_op(c, f->rop, t, e->loc, emit(c, a, t), -1, -1);
      {
        int x = emit(c, a, t);
        return mk_op(c, f->op, t, e->loc, x, emit(c, e->arg[1], t), -1);
      }
    case FN_FMA: {
      int x = emit(c, a, t);
      int y = emit(c, e->arg[1], t);
      return mk_op(c, LM_OP_FMA, t, e->loc, x, y, emit(c, e->arg[2], t));
    }
    case FN_WHERE: {
      int x = emit(c, a, LM_BOOL);
      int y = emit(c, e->arg[1], t);
      return mk_op(c, LM_OP_WHERE, t, e->loc, x, y, emit(c, e->arg[2], t));
    }
    case FN_ELEM1:
    case FN_MATH1:
      return mk_op(c, f->op, t, e->loc, emit(c, a, t), -1, -1);
    case FN_POW: {
      int x = emit(c, a, t);
      lm_node n = node0(LM_OP_POWI, t, e->loc);
      n.a = x;
      n.tile = c->nodes[x].tile;
      n.ipow = pow_exponent(c, e->arg[1], e->argloc[1]);
      return intern(c, &n);
    }
    case FN_CAST:
      /* A cast is no typing context: its weak operand takes the float
       * type, as a weak value with no strong neighbour does anywhere. */
      return mk_op(c, LM_OP_CAST, f->cast, e->loc, emit(c, a, elem), -1, -1);
    case FN_NONE:
      break;
    }
    break;
  }
  }
  abort();
}

/* ---- statements -------------------------------------------------------- */

/* The output parameter a store writes, with the checks on its kind. */
static int store_target(ck *c, const lm_stmt *s) {
  ent *x = env_find(c, s->name);
  if (!x) {
    if (lm_fe_reserved(s->name, strlen(s->name)))
      fail(c, s->loc, "cannot store into '%s'; only outputs can be stored",
           s->name);
    fail(c, s->loc, "unknown output '%s'", s->name);
  }
  if (x->kind != ENT_PARAM)
    fail(c, s->loc, "cannot store into %s '%s'; only outputs can be stored",
         x->kind == ENT_SYM ? "dim" : "value", s->name);
  const lm_param *p = &c->k->params[x->idx];
  if (!p->is_output)
    fail(c, s->loc, "cannot write input '%s' (only outputs can be stored)",
         p->name);
  if (s->kind == STMT_STORE_ROW && p->rank != 2)
    fail(c, s->loc, "'%s' is a per-row output [R]: store it with %s[r] = ...",
         p->name, p->name);
  if (s->kind == STMT_STORE_INST && p->rank != 1)
    fail(c, s->loc, "'%s' is 2-D: store a row with %s[r, :] = ...", p->name,
         p->name);
  return x->idx;
}

static void check_store(ck *c, const lm_stmt *s) {
  int pi = store_target(c, s);
  const lm_param *p = &c->k->params[pi];
  if (s->kind == STMT_STORE_ROW)
    tile_len(c, s->view_loc,
             view_len(c, s->view_loc, p->dims[1], s->step, p->name));
  infer(c, s->expr);
  lm_ast *e = s->expr;
  if (e->strong && e->dtype == LM_BOOL)
    fail(c, e->loc, "cannot store a bool into '%s'; use where(cond, 1, 0)",
         p->name);
  if (e->strong && e->dtype != p->dtype)
    fail(c, e->loc, "dtype mismatch: storing %s into %s output '%s'",
         lm_dtype_name(e->dtype), lm_dtype_name(p->dtype), p->name);
  if (s->kind == STMT_STORE_INST && e->tile)
    fail(c, e->loc,
         "shape mismatch: a tile stored into per-row output '%s' "
         "(reduce it first, e.g. with sum(...))",
         p->name);
  /* Row stores into one output all have the column domain's length, so
   * they share a step, and two of them overlap only if they are the same
   * view. */
  for (int i = 0; i < c->ns; i++) {
    const lm_store *o = &c->stores[i];
    if (o->param != pi)
      continue;
    if (s->kind == STMT_STORE_INST ||
        (o->start == s->start && o->step == s->step))
      fail(c, s->loc, "output '%s'%s%s is stored twice (first at %d:%d)",
           p->name, s->kind == STMT_STORE_INST ? "" : " view ",
           s->kind == STMT_STORE_INST ? "" : view_str(c, s->start, s->step),
           o->loc.line, o->loc.col);
  }
  if (c->ns == LM_MAX_STORES)
    fail(c, s->loc, "too many stores: at most %d per kernel", LM_MAX_STORES);
  int v = emit(c, e, p->dtype);
  if (c->ns == c->caps)
    c->stores =
        lm_fe_grow(c->fe, c->stores, c->ns, &c->caps, sizeof *c->stores);
  lm_store *st = &c->stores[c->ns++];
  memset(st, 0, sizeof *st);
  st->kind = s->kind == STMT_STORE_ROW ? LM_STORE_ROW : LM_STORE_INST;
  st->param = pi;
  st->start = s->kind == STMT_STORE_ROW ? s->start : 0;
  st->step = s->kind == STMT_STORE_ROW ? s->step : 0;
  st->value = v;
  st->loc = s->loc;
}

static void check_def(ck *c, const lm_stmt *s) {
  if (lm_fe_reserved(s->name, strlen(s->name)))
    fail(c, s->loc, "reserved name '%s' cannot be a value name", s->name);
  ent *x = env_find(c, s->name);
  if (x) {
    if (x->kind == ENT_SYM && x->idx == 0)
      fail(c, s->loc, "'R' is the instance count dim; it cannot be redefined");
    if (x->kind == ENT_VALUE)
      fail(c, s->loc, "redefinition of '%s' (first defined at %d:%d)", s->name,
           x->loc.line, x->loc.col);
    fail(c, s->loc, "redefinition of '%s' (a %s, declared at %d:%d)", s->name,
         x->kind == ENT_SYM ? "dim" : "parameter", x->loc.line, x->loc.col);
  }
  infer(c, s->expr);
  int id = emit(c, s->expr, c->k->elem);
  if (!c->nodes[id].name)
    c->nodes[id].name = s->name;
  env_add(c, s->name, ENT_VALUE, id, s->loc);
}

/* ---- canonical order and facts ---------------------------------------- */

static int operand(const lm_node *n, int i) {
  return i == 0 ? n->a : i == 1 ? n->b : n->c;
}

/* Renumber the nodes in postorder from the stores, then from unused named
 * values, with an explicit stack: chains of named values can be deep. */
static void canonicalize(ck *c) {
  int n = c->nn;
  int *newid = lm_arena_alloc(c->fe->arena, (size_t)n * sizeof *newid);
  int *stack = lm_arena_alloc(c->fe->arena, (size_t)n * sizeof *stack);
  int *order = lm_arena_alloc(c->fe->arena, (size_t)n * sizeof *order);
  for (int i = 0; i < n; i++)
    newid[i] = -1;
  int next = 0;
  int nroots = c->ns + n;
  for (int ri = 0; ri < nroots; ri++) {
    int root;
    if (ri < c->ns)
      root = c->stores[ri].value;
    else if (c->nodes[ri - c->ns].name)
      root = ri - c->ns;
    else
      continue;
    if (newid[root] >= 0)
      continue;
    int sp = 0;
    stack[sp++] = root;
    while (sp) {
      int top = stack[sp - 1], pushed = 0;
      for (int i = 0; i < 3 && !pushed; i++) {
        int o = operand(&c->nodes[top], i);
        if (o >= 0 && newid[o] < 0) {
          stack[sp++] = o;
          pushed = 1;
        }
      }
      if (!pushed) {
        sp--;
        newid[top] = next;
        order[next++] = top;
      }
    }
  }
  /* Every node hangs off a store or a named value; see check_def. */
  if (next != n)
    abort();
  lm_node *nodes =
      lm_arena_alloc(c->fe->arena, (size_t)(n ? n : 1) * sizeof *nodes);
  for (int i = 0; i < n; i++) {
    lm_node x = c->nodes[order[i]];
    if (x.a >= 0)
      x.a = newid[x.a];
    if (x.b >= 0)
      x.b = newid[x.b];
    if (x.c >= 0)
      x.c = newid[x.c];
    nodes[i] = x;
  }
  c->nodes = nodes;
  for (int i = 0; i < c->ns; i++)
    c->stores[i].value = newid[c->stores[i].value];
}

static int is_reduction(lm_op op) {
  return op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN;
}

static void fill_facts(ck *c) {
  lm_kernel *k = c->k;
  lm_node *nodes = c->nodes;
  int maxlevel = 0;
  for (int i = 0; i < c->nn; i++) {
    lm_node *x = &nodes[i];
    int lv = 0;
    for (int j = 0; j < 3; j++) {
      int o = operand(x, j);
      if (o < 0)
        continue;
      nodes[o].nuses++;
      int v = nodes[o].tile ? nodes[o].level : nodes[o].avail;
      if (v > lv)
        lv = v;
    }
    /* r and buf[r] are leaves too, and differ by row */
    int leaf = x->op == LM_OP_CONST || x->op == LM_OP_SCALAR || x->op == LM_OP_DIM;
    x->fixed = leaf || (x->a >= 0 && !x->tile && !is_reduction(x->op) && nodes[x->a].fixed &&
                        (x->b < 0 || nodes[x->b].fixed) && (x->c < 0 || nodes[x->c].fixed));
    if (is_reduction(x->op)) {
      x->avail = nodes[x->a].level + 1;
    } else if (x->tile) {
      x->level = lv;
      if (lv > maxlevel)
        maxlevel = lv;
    } else {
      x->avail = lv;
    }
  }
  for (int i = 0; i < c->ns; i++) {
    lm_store *s = &c->stores[i];
    const lm_node *v = &nodes[s->value];
    nodes[s->value].nuses++;
    s->level = v->tile ? v->level : v->avail;
    if (s->kind == LM_STORE_ROW && s->level > maxlevel)
      maxlevel = s->level;
  }
  for (int i = 0; i < c->nn; i++) {
    const lm_node *x = &nodes[i];
    for (int j = 0; j < 3; j++) {
      int o = operand(x, j);
      if (o >= 0 && nodes[o].tile && nodes[o].name && x->tile &&
          x->level > nodes[o].level)
        nodes[o].snap = 1;
    }
  }
  k->nodes = nodes;
  k->nnodes = c->nn;
  k->stores = c->stores;
  k->nstores = c->ns;
  k->ncols = c->ncols;
  k->nloops = maxlevel + 1;
  k->col_sym = c->ncols.sym;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == LM_PARAM_BUFFER && k->params[i].rank == 2) {
      k->col_sym = k->params[i].dims[1].sym;
      break;
    }
}

void lm_fe_check(lm_fe *fe) {
  ck c;
  memset(&c, 0, sizeof c);
  c.fe = fe;
  c.k = fe->k;
  lm_kernel *k = fe->k;
  for (int i = 0; i < k->nsyms; i++)
    env_add(&c, k->syms[i], ENT_SYM, i, fe->sym_locs[i]);
  for (int i = 0; i < k->nparams; i++)
    env_add(&c, k->params[i].name, ENT_PARAM, i, k->params[i].loc);
  for (int i = 0; i < fe->nstmts; i++) {
    const lm_stmt *s = &fe->stmts[i];
    if (s->kind == STMT_DEF)
      check_def(&c, s);
    else
      check_store(&c, s);
  }
  for (int i = 0; i < k->nparams; i++) {
    if (!k->params[i].is_output)
      continue;
    int stored = 0;
    for (int j = 0; j < c.ns; j++)
      stored |= c.stores[j].param == i;
    if (!stored)
      fail(&c, k->params[i].loc, "output '%s' is never written",
           k->params[i].name);
  }
  if (!c.have_ncols) {
    if (c.any_tile)
      fail(&c, fe->kernel_loc,
           "the column domain is unknown: no tile load or "
           "row store sets its length");
    fail(&c, fe->kernel_loc, "kernel has no tile: nothing runs over columns");
  }
  canonicalize(&c);
  fill_facts(&c);
}
