/* Printer: the IR back to .lk text, the --print-ir listing, and structural
 * equality.
 *
 * The printed text re-parses to an equal kernel.  Three things make that
 * hold.  Named nodes are printed as `name = ...` statements in node order
 * and everything unnamed inline, so hash-consing on the way back in merges
 * the inline copies into the same nodes.  Weak literals are printed bare;
 * on re-parse they meet the same strong neighbours and get the same dtype.
 * And the checker numbers nodes canonically (postorder from the stores),
 * so the statement order chosen here does not change the numbering.
 * Numbers use the shortest decimal form that reads back to the same
 * double. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/frontend.h"

typedef struct sb {
  char *p;
  size_t n, cap;
  int oom;
} sb;

static void sb_printf(sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sb *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int w = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = 1;
      return;
    }
    if ((size_t)w < room) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap - b->n <= (size_t)w)
      cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
}

static char *sb_finish(sb *b) {
  if (b->oom || !b->p) {
    free(b->p);
    return b->oom ? NULL : calloc(1, 1);
  }
  return b->p;
}

const char *lm_dtype_name(lm_dtype t) {
  switch (t) {
  case LM_F32:
    return "f32";
  case LM_F64:
    return "f64";
  case LM_I32:
    return "i32";
  case LM_BOOL:
    return "bool";
  }
  return "?";
}

static const char *const op_names[LM_OP__COUNT] = {
    [LM_OP_CONST] = "const",
    [LM_OP_SCALAR] = "scalar",
    [LM_OP_DIM] = "dim",
    [LM_OP_ROWIDX] = "rowidx",
    [LM_OP_COLIDX] = "colidx",
    [LM_OP_LOAD_ROW] = "load_row",
    [LM_OP_LOAD_COL] = "load_col",
    [LM_OP_LOAD_INST] = "load_inst",
    [LM_OP_NEG] = "neg",
    [LM_OP_ABS] = "abs",
    [LM_OP_NOT] = "not",
    [LM_OP_EXP] = "exp",
    [LM_OP_LOG] = "log",
    [LM_OP_SQRT] = "sqrt",
    [LM_OP_RSQRT] = "rsqrt",
    [LM_OP_TANH] = "tanh",
    [LM_OP_ERF] = "erf",
    [LM_OP_SIGMOID] = "sigmoid",
    [LM_OP_SIN] = "sin",
    [LM_OP_COS] = "cos",
    [LM_OP_POWI] = "powi",
    [LM_OP_CAST] = "cast",
    [LM_OP_ADD] = "add",
    [LM_OP_SUB] = "sub",
    [LM_OP_MUL] = "mul",
    [LM_OP_DIV] = "div",
    [LM_OP_MIN] = "min",
    [LM_OP_MAX] = "max",
    [LM_OP_EQ] = "eq",
    [LM_OP_NE] = "ne",
    [LM_OP_LT] = "lt",
    [LM_OP_LE] = "le",
    [LM_OP_GT] = "gt",
    [LM_OP_GE] = "ge",
    [LM_OP_AND] = "and",
    [LM_OP_OR] = "or",
    [LM_OP_FMA] = "fma",
    [LM_OP_WHERE] = "where",
    [LM_OP_RSUM] = "rsum",
    [LM_OP_RMAX] = "rmax",
    [LM_OP_RMIN] = "rmin",
};

const char *lm_op_name(lm_op op) {
  if ((int)op < 0 || op >= LM_OP__COUNT || !op_names[op])
    return "?";
  return op_names[op];
}

/* Shortest "%.*g" that reads back as v; inf and nan by name. */
static void fmt_num(char *buf, size_t n, double v) {
  if (isnan(v)) {
    snprintf(buf, n, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, n, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      return;
  }
}

static void put_dim(sb *b, const lm_kernel *k, lm_dim d) {
  char buf[64];
  lm_fe_dim_str(k, d, buf, sizeof buf);
  sb_printf(b, "%s", buf);
}

static void put_view(sb *b, int start, int step) {
  if (step == 1)
    sb_printf(b, ":");
  else
    sb_printf(b, "%d::%d", start, step);
}

static void put_param(sb *b, const lm_kernel *k, const lm_param *p) {
  sb_printf(b, "%s: %s", p->name, lm_dtype_name(p->dtype));
  if (p->kind == LM_PARAM_BUFFER) {
    sb_printf(b, "[");
    put_dim(b, k, p->dims[0]);
    if (p->rank == 2) {
      sb_printf(b, ", ");
      put_dim(b, k, p->dims[1]);
    }
    sb_printf(b, "]");
  }
  char num[64];
  if (p->has_default) {
    fmt_num(num, sizeof num, p->defval);
    sb_printf(b, " = %s", num);
  }
  if (p->gen == LM_GEN_MASK)
    sb_printf(b, " mask");
  else if (p->gen == LM_GEN_ROWLEN)
    sb_printf(b, " rowlen");
  else if (!p->is_output && p->dtype != LM_I32 && (p->lo != -1 || p->hi != 1)) {
    fmt_num(num, sizeof num, p->lo);
    sb_printf(b, " in(%s, ", num);
    fmt_num(num, sizeof num, p->hi);
    sb_printf(b, "%s)", num);
  }
}

/* Binding strength of a node's printed form (higher binds tighter). */
static int prec(lm_op op) {
  switch (op) {
  case LM_OP_OR:
    return 1;
  case LM_OP_AND:
    return 2;
  case LM_OP_EQ:
  case LM_OP_NE:
  case LM_OP_LT:
  case LM_OP_LE:
  case LM_OP_GT:
  case LM_OP_GE:
    return 3;
  case LM_OP_ADD:
  case LM_OP_SUB:
    return 4;
  case LM_OP_MUL:
  case LM_OP_DIV:
    return 5;
  case LM_OP_NEG:
  case LM_OP_NOT:
    return 6;
  default:
    return 7;
  }
}

static const char *infix(lm_op op) {
  switch (op) {
  case LM_OP_OR:
    return "||";
  case LM_OP_AND:
    return "&&";
  case LM_OP_EQ:
    return "==";
  case LM_OP_NE:
    return "!=";
  case LM_OP_LT:
    return "<";
  case LM_OP_LE:
    return "<=";
  case LM_OP_GT:
    return ">";
  case LM_OP_GE:
    return ">=";
  case LM_OP_ADD:
    return "+";
  case LM_OP_SUB:
    return "-";
  case LM_OP_MUL:
    return "*";
  case LM_OP_DIV:
    return "/";
  default:
    return NULL;
  }
}

static const char *call_name(const lm_node *n) {
  switch (n->op) {
  case LM_OP_RSUM:
    return "sum";
  case LM_OP_RMAX:
  case LM_OP_MAX:
    return "max";
  case LM_OP_RMIN:
  case LM_OP_MIN:
    return "min";
  case LM_OP_CAST:
    return lm_dtype_name(n->dtype);
  case LM_OP_POWI:
    return "pow";
  default:
    return lm_op_name(n->op);
  }
}

static void put_body(sb *b, const lm_kernel *k, int id, int minprec);

/* A use of node id: its name, or its expression inline. */
static void put_use(sb *b, const lm_kernel *k, int id, int minprec) {
  if (k->nodes[id].name)
    sb_printf(b, "%s", k->nodes[id].name);
  else
    put_body(b, k, id, minprec);
}

static void put_body(sb *b, const lm_kernel *k, int id, int minprec) {
  const lm_node *n = &k->nodes[id];
  int p = prec(n->op);
  if (p < minprec)
    sb_printf(b, "(");
  const char *op = infix(n->op);
  char num[64];
  switch (n->op) {
  case LM_OP_CONST:
    fmt_num(num, sizeof num, n->imm);
    sb_printf(b, "%s", num);
    break;
  case LM_OP_SCALAR:
    sb_printf(b, "%s", k->params[n->param].name);
    break;
  case LM_OP_DIM:
    if (n->coef == 1)
      sb_printf(b, "%s", k->syms[n->sym]);
    else
      sb_printf(b, "%lld * %s", (long long)n->coef, k->syms[n->sym]);
    break;
  case LM_OP_ROWIDX:
    sb_printf(b, "r");
    break;
  case LM_OP_COLIDX:
    sb_printf(b, "c");
    break;
  case LM_OP_LOAD_ROW:
    sb_printf(b, "%s[r, ", k->params[n->param].name);
    put_view(b, n->start, n->step);
    sb_printf(b, "]");
    break;
  case LM_OP_LOAD_COL:
    sb_printf(b, "%s[", k->params[n->param].name);
    put_view(b, n->start, n->step);
    sb_printf(b, "]");
    break;
  case LM_OP_LOAD_INST:
    sb_printf(b, "%s[r]", k->params[n->param].name);
    break;
  case LM_OP_NEG:
  case LM_OP_NOT:
    sb_printf(b, n->op == LM_OP_NEG ? "-" : "!");
    if (!k->nodes[n->a].name && prec(k->nodes[n->a].op) == 6) {
      /* a unary operand of a unary needs no parentheses, and must not get
       * them: "-(-(...))" nests twice as deep as "- - ..." when re-parsed */
      sb_printf(b, " ");
      put_use(b, k, n->a, 6);
    } else {
      put_use(b, k, n->a, 7);
    }
    break;
  case LM_OP_POWI:
    sb_printf(b, "pow(");
    put_use(b, k, n->a, 0);
    sb_printf(b, ", %d)", n->ipow);
    break;
  default:
    if (op) {
      /* Left-associative, except comparisons, which do not chain. */
      int lp = p == 3 ? p + 1 : p;
      put_use(b, k, n->a, lp);
      sb_printf(b, " %s ", op);
      put_use(b, k, n->b, p + 1);
    } else {
      sb_printf(b, "%s(", call_name(n));
      put_use(b, k, n->a, 0);
      if (n->b >= 0) {
        sb_printf(b, ", ");
        put_use(b, k, n->b, 0);
      }
      if (n->c >= 0) {
        sb_printf(b, ", ");
        put_use(b, k, n->c, 0);
      }
      sb_printf(b, ")");
    }
  }
  if (p < minprec)
    sb_printf(b, ")");
}

static void put_store(sb *b, const lm_kernel *k, const lm_store *s) {
  sb_printf(b, "  %s[r", k->params[s->param].name);
  if (s->kind == LM_STORE_ROW) {
    sb_printf(b, ", ");
    put_view(b, s->start, s->step);
  }
  sb_printf(b, "] = ");
  put_use(b, k, s->value, 0);
  sb_printf(b, "\n");
}

void lm_fe_node_str(const lm_kernel *k, int id, char *buf, size_t n) {
  sb b = {0};
  put_body(&b, k, id, 0);
  char *s = sb_finish(&b);
  if (!s) {
    snprintf(buf, n, "%%%d", id);
    return;
  }
  size_t len = strlen(s);
  if (len < n)
    snprintf(buf, n, "%s", s);
  else if (n > 4)
    snprintf(buf, n, "%.*s...", (int)(n - 4), s);
  free(s);
}

char *lm_kernel_print(const lm_kernel *k) {
  sb b = {0};
  sb_printf(&b, "kernel %s(", k->name);
  int first = 1;
  for (int i = 0; i < k->nparams; i++)
    if (!k->params[i].is_output) {
      sb_printf(&b, first ? "" : ", ");
      put_param(&b, k, &k->params[i]);
      first = 0;
    }
  sb_printf(&b, ") -> (");
  first = 1;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].is_output) {
      sb_printf(&b, first ? "" : ", ");
      put_param(&b, k, &k->params[i]);
      first = 0;
    }
  sb_printf(&b, ") {\n");
  /* A store is printed after the node it stores, and never before an
   * earlier store, so the stores keep their order. */
  int s = 0, pos = 0;
  for (int i = 0; i < k->nnodes; i++) {
    if (k->nodes[i].name) {
      sb_printf(&b, "  %s = ", k->nodes[i].name);
      put_body(&b, k, i, 0);
      sb_printf(&b, "\n");
    }
    while (s < k->nstores) {
      int p = k->stores[s].value > pos ? k->stores[s].value : pos;
      if (p != i)
        break;
      pos = p;
      put_store(&b, k, &k->stores[s++]);
    }
  }
  for (; s < k->nstores; s++)
    put_store(&b, k, &k->stores[s]);
  sb_printf(&b, "}\n");
  return sb_finish(&b);
}

static const char *gen_name(lm_gen g) {
  return g == LM_GEN_MASK ? "mask" : g == LM_GEN_ROWLEN ? "rowlen" : "default";
}

char *lm_kernel_dump(const lm_kernel *k) {
  sb b = {0};
  char num[64], num2[64];
  sb_printf(&b, "kernel %s\n", k->name);
  sb_printf(&b, "syms:");
  for (int i = 0; i < k->nsyms; i++)
    sb_printf(&b, " %d=%s", i, k->syms[i]);
  sb_printf(&b, "\nparams:\n");
  for (int i = 0; i < k->nparams; i++) {
    const lm_param *p = &k->params[i];
    sb_printf(&b, "  $%d %s %s ", i, p->is_output ? "out" : "in ", p->name);
    if (p->kind == LM_PARAM_SCALAR) {
      sb_printf(&b, "%s scalar", lm_dtype_name(p->dtype));
      if (p->has_default) {
        fmt_num(num, sizeof num, p->defval);
        sb_printf(&b, " = %s", num);
      }
    } else {
      sb_printf(&b, "%s[", lm_dtype_name(p->dtype));
      put_dim(&b, k, p->dims[0]);
      if (p->rank == 2) {
        sb_printf(&b, ", ");
        put_dim(&b, k, p->dims[1]);
      }
      sb_printf(&b, "]");
    }
    if (!p->is_output) {
      sb_printf(&b, " gen=%s", gen_name(p->gen));
      if (p->gen == LM_GEN_DEFAULT && p->dtype != LM_I32) {
        fmt_num(num, sizeof num, p->lo);
        fmt_num(num2, sizeof num2, p->hi);
        sb_printf(&b, " [%s, %s]", num, num2);
      }
    }
    sb_printf(&b, "\n");
  }
  sb_printf(&b, "nodes:\n");
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *n = &k->nodes[i];
    sb_printf(&b, "  %%%-3d = %-9s %-4s %s ", i, lm_op_name(n->op),
              lm_dtype_name(n->dtype), n->tile ? "tile" : "uni ");
    if (n->tile)
      sb_printf(&b, "L%d", n->level);
    else
      sb_printf(&b, "A%d", n->avail);
    int ops[3] = {n->a, n->b, n->c};
    for (int j = 0; j < 3; j++)
      if (ops[j] >= 0)
        sb_printf(&b, "%s%%%d", j ? ", " : " ", ops[j]);
    switch (n->op) {
    case LM_OP_CONST:
      fmt_num(num, sizeof num, n->imm);
      sb_printf(&b, " %s", num);
      break;
    case LM_OP_SCALAR:
    case LM_OP_LOAD_INST:
      sb_printf(&b, " $%d %s", n->param, k->params[n->param].name);
      break;
    case LM_OP_LOAD_ROW:
    case LM_OP_LOAD_COL:
      sb_printf(&b, " $%d %s[%s", n->param, k->params[n->param].name,
                n->op == LM_OP_LOAD_ROW ? "r, " : "");
      put_view(&b, n->start, n->step);
      sb_printf(&b, "]");
      break;
    case LM_OP_DIM:
      sb_printf(&b, " %lld*%s", (long long)n->coef, k->syms[n->sym]);
      break;
    case LM_OP_POWI:
      sb_printf(&b, " ^%d", n->ipow);
      break;
    default:
      break;
    }
    sb_printf(&b, "  ; uses=%d", n->nuses);
    if (n->name)
      sb_printf(&b, " name=%s", n->name);
    if (n->snap)
      sb_printf(&b, " snap");
    sb_printf(&b, "\n");
  }
  sb_printf(&b, "stores:\n");
  for (int i = 0; i < k->nstores; i++) {
    const lm_store *s = &k->stores[i];
    sb_printf(&b, "  %s[r", k->params[s->param].name);
    if (s->kind == LM_STORE_ROW) {
      sb_printf(&b, ", ");
      put_view(&b, s->start, s->step);
    }
    sb_printf(&b, "] = %%%d  ; %s %d\n", s->value,
              s->kind == LM_STORE_ROW ? "level" : "avail", s->level);
  }
  sb_printf(&b, "facts: ncols=");
  put_dim(&b, k, k->ncols);
  sb_printf(&b, " nloops=%d elem=%s col_sym=%s rowlen=%s\n", k->nloops,
            lm_dtype_name(k->elem), k->col_sym >= 0 ? k->syms[k->col_sym] : "-",
            k->rowlen_param >= 0 ? k->params[k->rowlen_param].name : "-");
  return sb_finish(&b);
}

static int same_str(const char *a, const char *b) {
  if (!a || !b)
    return a == b;
  return !strcmp(a, b);
}

static int same_dbl(double a, double b) { return !memcmp(&a, &b, sizeof a); }

static int same_dim(lm_dim a, lm_dim b) {
  return a.sym == b.sym && a.coef == b.coef;
}

int lm_kernel_equal(const lm_kernel *a, const lm_kernel *b) {
  if (!same_str(a->name, b->name) || a->nsyms != b->nsyms ||
      a->nparams != b->nparams || a->nnodes != b->nnodes ||
      a->nstores != b->nstores || !same_dim(a->ncols, b->ncols) ||
      a->col_sym != b->col_sym || a->rowlen_param != b->rowlen_param ||
      a->nloops != b->nloops || a->elem != b->elem)
    return 0;
  for (int i = 0; i < a->nsyms; i++)
    if (!same_str(a->syms[i], b->syms[i]))
      return 0;
  for (int i = 0; i < a->nparams; i++) {
    const lm_param *x = &a->params[i], *y = &b->params[i];
    if (!same_str(x->name, y->name) || x->kind != y->kind ||
        x->dtype != y->dtype || x->is_output != y->is_output ||
        x->rank != y->rank || !same_dim(x->dims[0], y->dims[0]) ||
        !same_dim(x->dims[1], y->dims[1]) || x->has_default != y->has_default ||
        !same_dbl(x->defval, y->defval) || x->gen != y->gen ||
        !same_dbl(x->lo, y->lo) || !same_dbl(x->hi, y->hi))
      return 0;
  }
  for (int i = 0; i < a->nnodes; i++) {
    const lm_node *x = &a->nodes[i], *y = &b->nodes[i];
    if (x->op != y->op || x->dtype != y->dtype || x->tile != y->tile ||
        x->a != y->a || x->b != y->b || x->c != y->c ||
        !same_dbl(x->imm, y->imm) || x->ipow != y->ipow ||
        x->param != y->param || x->sym != y->sym || x->coef != y->coef ||
        x->start != y->start || x->step != y->step ||
        !same_str(x->name, y->name) || x->level != y->level ||
        x->avail != y->avail || x->snap != y->snap || x->nuses != y->nuses)
      return 0;
  }
  for (int i = 0; i < a->nstores; i++) {
    const lm_store *x = &a->stores[i], *y = &b->stores[i];
    if (x->kind != y->kind || x->param != y->param || x->start != y->start ||
        x->step != y->step || x->value != y->value || x->level != y->level)
      return 0;
  }
  return 1;
}

/* The hash of the printed form names what the kernel computes, not how its
 * file is laid out. */
void lm_kernel_hash(const lm_kernel *k, char out[17]) {
  char *text = lm_kernel_print(k);
  uint64_t h = LM_FNV1A_INIT;
  if (text)
    h = lm_fnv1a(h, text, strlen(text));
  free(text);
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}
