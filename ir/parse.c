/* Parser of the kernel language, and the entry points that turn a source
 * into a checked kernel.
 *
 * The pipeline is three calls: lex, parse, check.  The parser builds the
 * kernel header (name, parameters, dim symbols) directly into the lm_kernel
 * and keeps the body as statement trees; the checker (check.c) types them
 * and builds the IR.  Declarations are checked here, because their rules
 * are local: a parameter's attributes, its dims, one float type per kernel.
 *
 * The grammar is LL(1) apart from two-token peeks; docs/language.md has it
 * in EBNF.  Every error points at the token that is wrong, and the first
 * error stops the parse. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/frontend.h"

static lm_tok *peek(lm_fe *fe) { return &fe->toks[fe->pos]; }
static lm_tok *peek2(lm_fe *fe) {
  return &fe->toks[fe->pos + (fe->toks[fe->pos].kind != TK_EOF)];
}
static lm_tok *next(lm_fe *fe) {
  lm_tok *t = &fe->toks[fe->pos];
  if (t->kind != TK_EOF)
    fe->pos++;
  return t;
}
static int accept(lm_fe *fe, lm_tok_kind k) {
  if (peek(fe)->kind != k)
    return 0;
  next(fe);
  return 1;
}
static int is_word(const lm_tok *t, const char *w) {
  return t->kind == TK_IDENT && (size_t)t->len == strlen(w) &&
         !memcmp(t->p, w, (size_t)t->len);
}
static const char *tok_str(lm_fe *fe, const lm_tok *t) {
  return lm_arena_strndup(fe->arena, t->p, (size_t)t->len);
}
static lm_tok *expect(lm_fe *fe, lm_tok_kind k, const char *what) {
  lm_tok *t = peek(fe);
  if (t->kind != k)
    lm_fe_fail(fe, t->loc, "expected %s, found %s", what,
               lm_fe_tok_desc(fe, t));
  return next(fe);
}
static void skip_nl(lm_fe *fe) {
  while (peek(fe)->kind == TK_NL)
    next(fe);
}

void lm_fe_dim_str(const lm_kernel *k, lm_dim d, char *buf, size_t n) {
  if (d.sym < 0)
    snprintf(buf, n, "%lld", (long long)d.coef);
  else if (d.coef == 1)
    snprintf(buf, n, "%s", k->syms[d.sym]);
  else
    snprintf(buf, n, "%lld*%s", (long long)d.coef, k->syms[d.sym]);
}

/* ---- declarations ------------------------------------------------------ */

static int find_param(lm_fe *fe, const lm_tok *t) {
  for (int i = 0; i < fe->k->nparams; i++)
    if (strlen(fe->k->params[i].name) == (size_t)t->len &&
        !memcmp(fe->k->params[i].name, t->p, (size_t)t->len))
      return i;
  return -1;
}
static int find_sym(lm_fe *fe, const lm_tok *t) {
  for (int i = 0; i < fe->k->nsyms; i++)
    if (strlen(fe->k->syms[i]) == (size_t)t->len &&
        !memcmp(fe->k->syms[i], t->p, (size_t)t->len))
      return i;
  return -1;
}

/* A positive integer literal that fits the given bound. */
static int64_t parse_posint(lm_fe *fe, lm_tok *t, int64_t max,
                            const char *what) {
  if (t->kind != TK_NUM)
    lm_fe_fail(fe, t->loc, "expected %s, found %s", what,
               lm_fe_tok_desc(fe, t));
  if (!t->is_int)
    lm_fe_fail(fe, t->loc, "%s must be an integer, found %s", what,
               lm_fe_tok_desc(fe, t));
  if (t->num > (double)max)
    lm_fe_fail(fe, t->loc, "%s %s is too large", what, lm_fe_tok_desc(fe, t));
  return (int64_t)t->num;
}

/* DIM := INT | SYMBOL | INT '*' SYMBOL */
static lm_dim parse_dim(lm_fe *fe) {
  lm_dim d = {-1, 1};
  lm_tok *t = peek(fe);
  if (t->kind == TK_NUM) {
    next(fe);
    d.coef = parse_posint(fe, t, (int64_t)1 << 40, "a dim");
    if (d.coef < 1)
      lm_fe_fail(fe, t->loc, "a dim must be positive, found %s",
                 lm_fe_tok_desc(fe, t));
    if (!accept(fe, TK_STAR))
      return d;
    t = peek(fe);
    if (t->kind != TK_IDENT)
      lm_fe_fail(fe, t->loc, "expected a dim symbol after '*', found %s",
                 lm_fe_tok_desc(fe, t));
  } else if (t->kind != TK_IDENT) {
    lm_fe_fail(fe, t->loc, "expected a dim (such as R, C, 64 or 2*H), found %s",
               lm_fe_tok_desc(fe, t));
  }
  next(fe);
  int s = find_sym(fe, t);
  if (s < 0) {
    if (lm_fe_reserved(t->p, (size_t)t->len))
      lm_fe_fail(fe, t->loc, "reserved name '%.*s' cannot be a dim", t->len,
                 t->p);
    if (find_param(fe, t) >= 0)
      lm_fe_fail(fe, t->loc, "'%.*s' is a parameter; it cannot also be a dim",
                 t->len, t->p);
    if (fe->k->nsyms >= LM_MAX_SYMS)
      lm_fe_fail(fe, t->loc, "too many dim symbols (at most %d, including R)",
                 LM_MAX_SYMS);
    s = fe->k->nsyms++;
    fe->k->syms[s] = tok_str(fe, t);
    fe->sym_locs[s] = t->loc;
  }
  d.sym = s;
  return d;
}

static int parse_dtype(lm_fe *fe, lm_tok *t, lm_dtype *out) {
  if (is_word(t, "f32"))
    *out = LM_F32;
  else if (is_word(t, "f64"))
    *out = LM_F64;
  else if (is_word(t, "i32"))
    *out = LM_I32;
  else
    return 0;
  (void)fe;
  return 1;
}

/* A signed number for defaults and in(LO, HI): ['-'] NUMBER | ['-'] inf. */
static double parse_signed(lm_fe *fe, const char *what, lm_tok **at) {
  int neg = accept(fe, TK_MINUS);
  lm_tok *t = next(fe);
  *at = t;
  double v;
  if (t->kind == TK_NUM)
    v = t->num;
  else if (is_word(t, "inf"))
    v = INFINITY;
  else
    lm_fe_fail(fe, t->loc, "expected a number for %s, found %s", what,
               lm_fe_tok_desc(fe, t));
  return neg ? -v : v;
}

static void parse_attrs(lm_fe *fe, lm_param *p) {
  int have_gen = 0;
  while (peek(fe)->kind == TK_IDENT) {
    lm_tok *t = peek(fe);
    if (peek2(fe)->kind == TK_COLON)
      lm_fe_fail(fe, t->loc, "expected ',' between parameters, found %s",
                 lm_fe_tok_desc(fe, t));
    int in = is_word(t, "in"), mask = is_word(t, "mask"),
        rowlen = is_word(t, "rowlen");
    if (!in && !mask && !rowlen)
      lm_fe_fail(fe, t->loc,
                 "unknown attribute %s (expected in(LO, HI), mask or rowlen)",
                 lm_fe_tok_desc(fe, t));
    if (p->is_output)
      lm_fe_fail(fe, t->loc,
                 "attribute '%.*s' on output '%s' (attributes describe how "
                 "inputs are generated)",
                 t->len, t->p, p->name);
    if (have_gen)
      lm_fe_fail(fe, t->loc,
                 "conflicting attribute '%.*s' on '%s' (at most one "
                 "of in(LO, HI), mask, rowlen)",
                 t->len, t->p, p->name);
    have_gen = 1;
    next(fe);
    if (in) {
      if (p->dtype == LM_I32)
        lm_fe_fail(fe, t->loc,
                   "in(LO, HI) needs a float parameter; '%s' is i32", p->name);
      lm_tok *lt, *ht;
      expect(fe, TK_LPAREN, "'(' after 'in'");
      double lo = parse_signed(fe, "LO", &lt);
      expect(fe, TK_COMMA, "',' in in(LO, HI)");
      double hi = parse_signed(fe, "HI", &ht);
      expect(fe, TK_RPAREN, "')' after in(LO, HI)");
      if (!isfinite(lo) || !isfinite(hi) || !(lo <= hi))
        lm_fe_fail(fe, lt->loc, "in(LO, HI) needs finite LO <= HI");
      if (p->dtype == LM_F32 && (fabs(lo) > FLT_MAX || fabs(hi) > FLT_MAX))
        lm_fe_fail(fe, fabs(lo) > FLT_MAX ? lt->loc : ht->loc,
                   "in(LO, HI) is outside the range of f32 '%s'", p->name);
      p->lo = lo;
      p->hi = hi;
    } else if (mask) {
      if (p->kind != LM_PARAM_BUFFER || p->dtype != LM_I32)
        lm_fe_fail(fe, t->loc, "mask needs an i32 buffer; '%s' is not one",
                   p->name);
      p->gen = LM_GEN_MASK;
    } else {
      if (p->kind != LM_PARAM_BUFFER || p->dtype != LM_I32 || p->rank != 1 ||
          p->dims[0].sym != 0)
        lm_fe_fail(fe, t->loc, "rowlen needs an i32[R] buffer; '%s' is not one",
                   p->name);
      if (fe->k->rowlen_param >= 0)
        lm_fe_fail(fe, t->loc,
                   "second rowlen parameter '%s' (the first is '%s'; at most "
                   "one per kernel)",
                   p->name, fe->k->params[fe->k->rowlen_param].name);
      p->gen = LM_GEN_ROWLEN;
      fe->k->rowlen_param = (int)(p - fe->k->params);
    }
  }
}

static void parse_param(lm_fe *fe, int is_output) {
  lm_kernel *k = fe->k;
  lm_tok *nt = peek(fe);
  if (nt->kind != TK_IDENT)
    lm_fe_fail(fe, nt->loc, "expected a %s name, found %s",
               is_output ? "output" : "parameter", lm_fe_tok_desc(fe, nt));
  next(fe);
  if (lm_fe_reserved(nt->p, (size_t)nt->len))
    lm_fe_fail(fe, nt->loc, "reserved name '%.*s' cannot be a parameter",
               nt->len, nt->p);
  int prev = find_param(fe, nt);
  if (prev >= 0)
    lm_fe_fail(fe, nt->loc, "duplicate parameter '%.*s' (first at %d:%d)",
               nt->len, nt->p, k->params[prev].loc.line,
               k->params[prev].loc.col);
  int s = find_sym(fe, nt);
  if (s >= 0) {
    if (s == 0)
      lm_fe_fail(fe, nt->loc,
                 "'R' is the instance count dim; it cannot be a parameter");
    lm_fe_fail(fe, nt->loc,
               "'%.*s' is a dim symbol (first at %d:%d); it "
               "cannot also be a parameter",
               nt->len, nt->p, fe->sym_locs[s].line, fe->sym_locs[s].col);
  }
  if (k->nparams == fe->cap_params)
    k->params = lm_fe_grow(fe, k->params, k->nparams, &fe->cap_params,
                           sizeof *k->params);
  lm_param *p = &k->params[k->nparams++];
  memset(p, 0, sizeof *p);
  p->name = tok_str(fe, nt);
  p->loc = nt->loc;
  p->is_output = is_output;
  p->gen = LM_GEN_DEFAULT;
  p->lo = -1;
  p->hi = 1;
  p->dims[0] = p->dims[1] = (lm_dim){-1, 0};
  expect(fe, TK_COLON, "':' after the parameter name");
  lm_tok *tt = peek(fe);
  if (tt->kind != TK_IDENT)
    lm_fe_fail(fe, tt->loc, "expected a dtype (f32, f64 or i32), found %s",
               lm_fe_tok_desc(fe, tt));
  next(fe);
  if (!parse_dtype(fe, tt, &p->dtype))
    lm_fe_fail(fe, tt->loc, "unknown dtype %s (expected f32, f64 or i32)",
               lm_fe_tok_desc(fe, tt));
  if (p->dtype != LM_I32) {
    if (fe->elem_param < 0) {
      fe->elem_param = k->nparams - 1;
      k->elem = p->dtype;
    } else if (k->elem != p->dtype) {
      lm_fe_fail(fe, tt->loc,
                 "dtype mix: '%s' is %s but '%s' is %s (all float parameters "
                 "of a kernel share one type)",
                 p->name, lm_dtype_name(p->dtype),
                 k->params[fe->elem_param].name, lm_dtype_name(k->elem));
    }
  }
  if (peek(fe)->kind == TK_LBRACK) {
    int nbuf = 0;
    for (int i = 0; i < k->nparams - 1; i++)
      nbuf += k->params[i].kind == LM_PARAM_BUFFER;
    if (nbuf == LM_MAX_BUFFERS)
      lm_fe_fail(fe, nt->loc,
                 "too many buffer parameters: at most %d per kernel, inputs "
                 "and outputs together",
                 LM_MAX_BUFFERS);
  }
  if (accept(fe, TK_LBRACK)) {
    p->kind = LM_PARAM_BUFFER;
    lm_tok *d0 = peek(fe);
    p->dims[0] = parse_dim(fe);
    p->rank = 1;
    lm_tok *d1 = NULL;
    if (accept(fe, TK_COMMA)) {
      d1 = peek(fe);
      p->dims[1] = parse_dim(fe);
      p->rank = 2;
      if (peek(fe)->kind == TK_COMMA)
        lm_fe_fail(fe, peek(fe)->loc, "a buffer has at most 2 dims");
    }
    expect(fe, TK_RBRACK, "']' after the dims");
    if (p->rank == 2) {
      if (p->dims[0].sym != 0 || p->dims[0].coef != 1)
        lm_fe_fail(fe, d0->loc,
                   "the first dim of a 2-D buffer must be R, "
                   "found %s",
                   lm_fe_tok_desc(fe, d0));
      if (p->dims[1].sym == 0)
        lm_fe_fail(fe, d1->loc, "R can only be the first dim");
    } else if (p->dims[0].sym == 0 && p->dims[0].coef != 1) {
      lm_fe_fail(fe, d0->loc, "R can only appear alone, as [R] or [R, N]");
    }
    if (is_output && p->rank == 1 && p->dims[0].sym != 0)
      lm_fe_fail(fe, d0->loc,
                 "output '%s' must be [R] or [R, N] (one part per instance)",
                 p->name);
  } else {
    p->kind = LM_PARAM_SCALAR;
    if (is_output)
      lm_fe_fail(fe, tt->loc, "output '%s' must be a buffer, e.g. %s[R, C]",
                 p->name, lm_dtype_name(p->dtype));
  }
  if (peek(fe)->kind == TK_ASSIGN) {
    lm_tok *eq = next(fe);
    if (is_output)
      lm_fe_fail(fe, eq->loc, "output '%s' cannot have a default", p->name);
    if (p->kind != LM_PARAM_SCALAR)
      lm_fe_fail(fe, eq->loc, "only scalars take defaults; '%s' is a buffer",
                 p->name);
    lm_tok *vt;
    p->defval = parse_signed(fe, "the default", &vt);
    p->has_default = 1;
    if (p->dtype == LM_I32 &&
        (!(vt->kind == TK_NUM && vt->is_int) || fabs(p->defval) > INT32_MAX))
      lm_fe_fail(fe, vt->loc, "the default of i32 '%s' must be an integer",
                 p->name);
    if (p->dtype == LM_F32 && isfinite(p->defval) && fabs(p->defval) > FLT_MAX)
      lm_fe_fail(fe, vt->loc, "the default %g is outside the range of f32 '%s'",
                 p->defval, p->name);
  }
  parse_attrs(fe, p);
}

static void parse_param_list(lm_fe *fe, int is_output) {
  lm_tok *open = expect(fe, TK_LPAREN,
                        is_output ? "'(' before the outputs"
                                  : "'(' after the kernel name");
  if (peek(fe)->kind == TK_RPAREN) {
    if (is_output)
      lm_fe_fail(fe, peek(fe)->loc, "a kernel needs at least one output");
    next(fe);
    return;
  }
  (void)open;
  for (;;) {
    parse_param(fe, is_output);
    if (accept(fe, TK_RPAREN))
      return;
    lm_tok *t = peek(fe);
    if (t->kind != TK_COMMA)
      lm_fe_fail(fe, t->loc, "expected ',' or ')' in the %s list, found %s",
                 is_output ? "output" : "parameter", lm_fe_tok_desc(fe, t));
    next(fe);
    if (accept(fe, TK_RPAREN))
      return; /* a trailing comma */
  }
}

/* ---- expressions ------------------------------------------------------- */

static lm_ast *parse_expr(lm_fe *fe);

static lm_ast *mk(lm_fe *fe, lm_ast_kind kind, lm_loc loc, lm_ast *a, lm_ast *b,
                  lm_ast *c) {
  lm_ast *e = lm_arena_alloc(fe->arena, sizeof *e);
  e->kind = kind;
  e->loc = loc;
  e->arg[0] = a;
  e->arg[1] = b;
  e->arg[2] = c;
  int h = 0;
  for (int i = 0; i < 3; i++)
    if (e->arg[i] && e->arg[i]->height > h)
      h = e->arg[i]->height;
  e->height = h + 1;
  if (e->height > LM_FE_MAX_DEPTH)
    lm_fe_fail(fe, loc, "expression nested too deeply (more than %d levels)",
               LM_FE_MAX_DEPTH);
  return e;
}

/* VIEW := ':' | INT '::' INT, with 0 <= start < step. */
static void parse_view(lm_fe *fe, int *start, int *step, lm_loc *loc) {
  lm_tok *t = peek(fe);
  *loc = t->loc;
  if (accept(fe, TK_COLON)) {
    *start = 0;
    *step = 1;
    return;
  }
  if (t->kind != TK_NUM)
    lm_fe_fail(fe, t->loc, "expected a view (':' or START::STEP), found %s",
               lm_fe_tok_desc(fe, t));
  next(fe);
  int64_t s = parse_posint(fe, t, INT_MAX, "a view start");
  expect(fe, TK_DCOLON, "'::' in the view START::STEP");
  lm_tok *u = next(fe);
  int64_t st = parse_posint(fe, u, INT_MAX, "a view step");
  if (st < 1)
    lm_fe_fail(fe, u->loc, "a view step must be at least 1");
  if (st > LM_MAX_VIEW_STEP)
    lm_fe_fail(fe, u->loc, "view step %lld is more than %d, the largest step",
               (long long)st, LM_MAX_VIEW_STEP);
  if (s >= st)
    lm_fe_fail(fe, t->loc, "view start %lld must be less than its step %lld",
               (long long)s, (long long)st);
  *start = (int)s;
  *step = (int)st;
}

/* name '[' ( 'r' [',' VIEW] | VIEW ) ']' */
static lm_ast *parse_index(lm_fe *fe, lm_tok *nt) {
  lm_tok *open = next(fe); /* '[' */
  lm_ast *e = mk(fe, AST_INDEX, nt->loc, NULL, NULL, NULL);
  e->name = tok_str(fe, nt);
  lm_tok *t = peek(fe);
  if (t->kind == TK_IDENT) {
    if (!is_word(t, "r"))
      lm_fe_fail(fe, t->loc,
                 "expected 'r' or a view in the index, found %s "
                 "(buffers are indexed by the instance r and a column view)",
                 lm_fe_tok_desc(fe, t));
    next(fe);
    e->ix_row = 1;
    if (accept(fe, TK_COMMA)) {
      e->ix_view = 1;
      parse_view(fe, &e->start, &e->step, &e->view_loc);
    }
  } else if (t->kind == TK_COLON || t->kind == TK_NUM) {
    e->ix_view = 1;
    parse_view(fe, &e->start, &e->step, &e->view_loc);
  } else {
    lm_fe_fail(fe, t->loc, "expected 'r' or a view in the index, found %s",
               lm_fe_tok_desc(fe, t));
  }
  (void)open;
  expect(fe, TK_RBRACK, "']' to close the index");
  return e;
}

static lm_ast *parse_primary(lm_fe *fe) {
  lm_tok *t = peek(fe);
  if (t->kind == TK_NUM) {
    next(fe);
    lm_ast *e = mk(fe, AST_NUM, t->loc, NULL, NULL, NULL);
    e->num = t->num;
    e->num_float = !t->is_int;
    e->num_int = t->is_int;
    return e;
  }
  if (t->kind == TK_LPAREN) {
    next(fe);
    lm_ast *e = parse_expr(fe);
    expect(fe, TK_RPAREN, "')'");
    return e;
  }
  if (t->kind != TK_IDENT)
    lm_fe_fail(fe, t->loc, "expected an expression, found %s",
               lm_fe_tok_desc(fe, t));
  next(fe);
  if (is_word(t, "inf") || is_word(t, "nan")) {
    lm_ast *e = mk(fe, AST_NUM, t->loc, NULL, NULL, NULL);
    e->num = t->p[0] == 'i' ? INFINITY : NAN;
    e->num_float = 1;
    return e;
  }
  if (peek(fe)->kind == TK_LPAREN) {
    next(fe);
    lm_ast *args[3] = {0};
    lm_loc locs[3] = {{0, 0}};
    int n = 0;
    if (peek(fe)->kind != TK_RPAREN) {
      for (;;) {
        lm_loc l = peek(fe)->loc;
        lm_ast *a = parse_expr(fe);
        if (n < 3) {
          args[n] = a;
          locs[n] = l;
        }
        n++;
        if (!accept(fe, TK_COMMA))
          break;
      }
    }
    expect(fe, TK_RPAREN, "',' or ')' in the call");
    lm_ast *e = mk(fe, AST_CALL, t->loc, args[0], args[1], args[2]);
    e->name = tok_str(fe, t);
    e->nargs = n;
    memcpy(e->argloc, locs, sizeof locs);
    return e;
  }
  if (peek(fe)->kind == TK_LBRACK)
    return parse_index(fe, t);
  lm_ast *e = mk(fe, AST_NAME, t->loc, NULL, NULL, NULL);
  e->name = tok_str(fe, t);
  return e;
}

static lm_ast *parse_unary(lm_fe *fe) {
  lm_tok *t = peek(fe);
  if (++fe->depth > LM_FE_MAX_DEPTH)
    lm_fe_fail(fe, t->loc, "expression nested too deeply (more than %d levels)",
               LM_FE_MAX_DEPTH);
  lm_ast *e;
  if (t->kind == TK_MINUS || t->kind == TK_NOT) {
    next(fe);
    lm_ast *a = parse_unary(fe);
    e = mk(fe, AST_UNARY, t->loc, a, NULL, NULL);
    e->op = t->kind;
  } else {
    e = parse_primary(fe);
    if (peek(fe)->kind == TK_LBRACK)
      lm_fe_fail(fe, peek(fe)->loc,
                 "only a parameter can be indexed, as in x[r, :]");
  }
  fe->depth--;
  return e;
}

static lm_ast *binary(lm_fe *fe, lm_tok *op, lm_ast *a, lm_ast *b) {
  lm_ast *e = mk(fe, AST_BINARY, op->loc, a, b, NULL);
  e->op = op->kind;
  return e;
}

static lm_ast *parse_mul(lm_fe *fe) {
  lm_ast *e = parse_unary(fe);
  while (peek(fe)->kind == TK_STAR || peek(fe)->kind == TK_SLASH) {
    lm_tok *op = next(fe);
    e = binary(fe, op, e, parse_unary(fe));
  }
  return e;
}

static lm_ast *parse_add(lm_fe *fe) {
  lm_ast *e = parse_mul(fe);
  while (peek(fe)->kind == TK_PLUS || peek(fe)->kind == TK_MINUS) {
    lm_tok *op = next(fe);
    e = binary(fe, op, e, parse_mul(fe));
  }
  return e;
}

static int is_cmp(lm_tok_kind k) {
  return k == TK_EQ || k == TK_NE || k == TK_LT || k == TK_LE || k == TK_GT ||
         k == TK_GE;
}

static lm_ast *parse_cmp(lm_fe *fe) {
  lm_ast *e = parse_add(fe);
  if (is_cmp(peek(fe)->kind)) {
    lm_tok *op = next(fe);
    e = binary(fe, op, e, parse_add(fe));
    if (is_cmp(peek(fe)->kind))
      lm_fe_fail(
          fe, peek(fe)->loc,
          "comparisons do not chain; combine them with && or parentheses");
  }
  return e;
}

static lm_ast *parse_and(lm_fe *fe) {
  lm_ast *e = parse_cmp(fe);
  while (peek(fe)->kind == TK_AND) {
    lm_tok *op = next(fe);
    e = binary(fe, op, e, parse_cmp(fe));
  }
  return e;
}

static lm_ast *parse_expr(lm_fe *fe) {
  lm_ast *e = parse_and(fe);
  while (peek(fe)->kind == TK_OR) {
    lm_tok *op = next(fe);
    e = binary(fe, op, e, parse_and(fe));
  }
  return e;
}

/* ---- statements -------------------------------------------------------- */

static void parse_stmt(lm_fe *fe) {
  lm_tok *nt = peek(fe);
  if (nt->kind != TK_IDENT)
    lm_fe_fail(fe, nt->loc,
               "expected a statement (NAME = ... or OUT[r, :] = "
               "...), found %s",
               lm_fe_tok_desc(fe, nt));
  next(fe);
  if (fe->nstmts == fe->cap_stmts)
    fe->stmts = lm_fe_grow(fe, fe->stmts, fe->nstmts, &fe->cap_stmts,
                           sizeof *fe->stmts);
  lm_stmt *s = &fe->stmts[fe->nstmts];
  memset(s, 0, sizeof *s);
  s->name = tok_str(fe, nt);
  s->loc = nt->loc;
  if (accept(fe, TK_LBRACK)) {
    lm_tok *t = peek(fe);
    if (!is_word(t, "r"))
      lm_fe_fail(fe, t->loc, "a store indexes the row with 'r', found %s",
                 lm_fe_tok_desc(fe, t));
    next(fe);
    if (accept(fe, TK_COMMA)) {
      s->kind = STMT_STORE_ROW;
      parse_view(fe, &s->start, &s->step, &s->view_loc);
    } else {
      s->kind = STMT_STORE_INST;
    }
    expect(fe, TK_RBRACK, "']' to close the store index");
  } else {
    s->kind = STMT_DEF;
  }
  lm_tok *eq = peek(fe);
  if (eq->kind != TK_ASSIGN)
    lm_fe_fail(fe, eq->loc, "expected '=' after '%s%s', found %s", s->name,
               s->kind == STMT_DEF ? "" : "[...]", lm_fe_tok_desc(fe, eq));
  next(fe);
  s->eq_loc = eq->loc;
  fe->depth = 0;
  s->expr = parse_expr(fe);
  fe->nstmts++;
  lm_tok *t = peek(fe);
  if (t->kind != TK_NL && t->kind != TK_SEMI && t->kind != TK_RBRACE)
    lm_fe_fail(fe, t->loc, "expected end of statement, found %s",
               lm_fe_tok_desc(fe, t));
}

void lm_fe_parse(lm_fe *fe) {
  lm_kernel *k = fe->k;
  skip_nl(fe);
  lm_tok *t = peek(fe);
  if (t->kind == TK_EOF)
    lm_fe_fail(fe, t->loc, "empty file: no kernel");
  if (!is_word(t, "kernel"))
    lm_fe_fail(fe, t->loc, "expected 'kernel', found %s",
               lm_fe_tok_desc(fe, t));
  next(fe);
  lm_tok *nt = peek(fe);
  if (nt->kind != TK_IDENT)
    lm_fe_fail(fe, nt->loc, "expected the kernel name, found %s",
               lm_fe_tok_desc(fe, nt));
  if (lm_fe_reserved(nt->p, (size_t)nt->len))
    lm_fe_fail(fe, nt->loc, "reserved name '%.*s' cannot be the kernel name",
               nt->len, nt->p);
  next(fe);
  k->name = tok_str(fe, nt);
  fe->kernel_loc = nt->loc;
  parse_param_list(fe, 0);
  skip_nl(fe);
  t = peek(fe);
  if (t->kind != TK_ARROW)
    lm_fe_fail(fe, t->loc,
               "expected '->' and the outputs after the parameter "
               "list, found %s",
               lm_fe_tok_desc(fe, t));
  next(fe);
  skip_nl(fe);
  parse_param_list(fe, 1);
  skip_nl(fe);
  expect(fe, TK_LBRACE, "'{' to open the kernel body");
  for (;;) {
    while (peek(fe)->kind == TK_NL || peek(fe)->kind == TK_SEMI)
      next(fe);
    t = peek(fe);
    if (t->kind == TK_RBRACE)
      break;
    if (t->kind == TK_EOF)
      lm_fe_fail(fe, t->loc,
                 "unterminated kernel body: expected '}' before "
                 "end of file");
    parse_stmt(fe);
  }
  fe->body_end = next(fe)->loc;
  skip_nl(fe);
  t = peek(fe);
  if (t->kind != TK_EOF)
    lm_fe_fail(fe, t->loc,
               "unexpected %s after the kernel (one kernel per file)",
               lm_fe_tok_desc(fe, t));
}

/* ---- entry points ------------------------------------------------------ */

lm_status lm_fe_kernel_parse(const char *file, const char *src, size_t len,
                            lm_kernel **out, lm_error *err) {
  *out = NULL;
  lm_arena *a = lm_arena_new();
  if (!a)
    return lm_error_set(err, LM_ESYS, "out of memory");
  lm_fe *fe = lm_arena_alloc(a, sizeof *fe);
  lm_kernel *k = lm_arena_alloc(a, sizeof *k);
  fe->file = lm_arena_strdup(a, file ? file : "<input>");
  fe->src = src ? src : "";
  fe->len = src ? len : 0;
  fe->arena = a;
  fe->err = err;
  fe->k = k;
  fe->elem_param = -1;
  k->arena = a;
  k->file = fe->file;
  k->syms = lm_arena_alloc(a, LM_MAX_SYMS * sizeof *k->syms);
  k->syms[0] = "R";
  k->nsyms = 1;
  fe->sym_locs = lm_arena_alloc(a, LM_MAX_SYMS * sizeof *fe->sym_locs);
  k->rowlen_param = -1;
  k->col_sym = -1;
  k->elem = LM_F32;
  if (setjmp(fe->fail)) {
    lm_arena_free(a);
    return LM_EINPUT;
  }
  lm_fe_lex(fe);
  lm_fe_parse(fe);
  lm_fe_check(fe);
  lm_fe_ranges(fe);
  *out = k;
  return LM_OK;
}

lm_status lm_kernel_parse(const char *file, const char *src, size_t len,
                          lm_kernel **out, lm_error *err) {
  lm_status st = lm_fe_kernel_parse(file, src, len, out, err);
  if (st == LM_OK)
    lm_fe_relax(*out);
  return st;
}

lm_status lm_kernel_load(const char *path, lm_kernel **out, lm_error *err) {
  *out = NULL;
  char *src;
  size_t n;
  lm_status s = lm_file_read(path, &src, &n, err);
  if (s != LM_OK)
    return s;
  s = lm_kernel_parse(path, src, n, out, err);
  free(src);
  return s;
}

void lm_kernel_free(lm_kernel *k) {
  if (!k)
    return;
  lm_kernel_free(k->relaxed);
  lm_arena_free(k->arena);
}
