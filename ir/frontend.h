/* Internal interface of the kernel-language front end: the lexer, the
 * parser, the checker and their shared state.  Nothing outside ir/ includes
 * this header; the public face is include/lanemap/ir.h.
 *
 * Errors unwind with longjmp to lm_kernel_parse.  That is safe because every
 * byte the front end allocates lives in the kernel's arena, which
 * lm_kernel_parse frees on the error path: an error can stop the front end
 * anywhere without leaking and without threading a status through every
 * recursive-descent function. */
#ifndef LANEMAP_IR_FRONTEND_H
#define LANEMAP_IR_FRONTEND_H

#include <setjmp.h>

#include "lanemap/ir.h"

/* Limits of the language (docs/language.md, "Limits"). */
#define LM_FE_MAX_DEPTH 256  /* expression nesting */
#define LM_FE_MAX_LINE 65536 /* bytes per line */
/* The most elements a buffer may have (shape.c); so also the longest row. */
#define LM_SHAPE_MAX_ELEMS ((int64_t)1 << 31)

typedef enum lm_tok_kind {
  TK_EOF,
  TK_NL, /* a statement separator; absent inside ( ) and [ ] */
  TK_IDENT,
  TK_NUM,
  TK_LPAREN,
  TK_RPAREN,
  TK_LBRACK,
  TK_RBRACK,
  TK_LBRACE,
  TK_RBRACE,
  TK_COMMA,
  TK_COLON,
  TK_DCOLON,
  TK_SEMI,
  TK_ASSIGN,
  TK_EQ,
  TK_NE,
  TK_LT,
  TK_LE,
  TK_GT,
  TK_GE,
  TK_PLUS,
  TK_MINUS,
  TK_STAR,
  TK_SLASH,
  TK_NOT,
  TK_AND,
  TK_OR,
  TK_ARROW,
} lm_tok_kind;

typedef struct lm_tok {
  lm_tok_kind kind;
  const char *p; /* token text in the source */
  int len;
  lm_loc loc;
  double num; /* TK_NUM: value */
  int is_int; /* TK_NUM: written with digits only */
} lm_tok;

/* Expression tree, as written.  The checker types it and turns it into
 * hash-consed IR nodes. */
typedef enum lm_ast_kind {
  AST_NUM,   /* literal (also inf, nan) */
  AST_NAME,  /* identifier */
  AST_INDEX, /* name[r, view], name[view], name[r] */
  AST_CALL,  /* name(args) */
  AST_UNARY, /* op arg[0] */
  AST_BINARY /* arg[0] op arg[1] */
} lm_ast_kind;

typedef struct lm_ast {
  lm_ast_kind kind;
  lm_loc loc;       /* the token the node stands for */
  double num;       /* NUM */
  int num_float;    /* NUM: a float literal (has '.', 'e', inf, nan) */
  int num_int;      /* NUM: digits only (for pow exponents) */
  const char *name; /* NAME, INDEX (buffer), CALL (function) */
  lm_tok_kind op;   /* UNARY, BINARY */
  struct lm_ast *arg[3];
  int nargs;
  lm_loc argloc[3]; /* CALL: where each argument starts */
  int ix_row;       /* INDEX: first index is r */
  int ix_view;      /* INDEX: has a view */
  int start, step;  /* INDEX: view */
  lm_loc view_loc;
  int height; /* tree height, bounded by LM_FE_MAX_DEPTH */
  /* filled by the checker's typing pass */
  int strong;     /* 1: dtype is fixed; 0: weak (literal or dim) */
  lm_dtype dtype; /* strong: the type */
  int wfloat;     /* weak: a float value (else an int) */
  int tile;       /* a tile (else uniform) */
} lm_ast;

typedef enum lm_stmt_kind {
  STMT_DEF,       /* name = expr */
  STMT_STORE_ROW, /* out[r, view] = expr */
  STMT_STORE_INST /* out[r] = expr */
} lm_stmt_kind;

typedef struct lm_stmt {
  lm_stmt_kind kind;
  const char *name;
  lm_loc loc;      /* the name */
  int start, step; /* STORE_ROW view */
  lm_loc view_loc;
  lm_loc eq_loc; /* the '=' */
  lm_ast *expr;
} lm_stmt;

typedef struct lm_fe {
  const char *file;
  const char *src;
  size_t len;
  lm_arena *arena;
  lm_error *err;
  jmp_buf fail;
  /* tokens */
  lm_tok *toks;
  int ntoks, pos;
  int depth; /* parser recursion depth */
  /* the kernel being built */
  lm_kernel *k;
  int cap_params;
  lm_loc *sym_locs; /* where each symbol first appears */
  int elem_param;   /* the first float parameter, -1 if none */
  lm_stmt *stmts;
  int nstmts, cap_stmts;
  lm_loc kernel_loc; /* the kernel's name */
  lm_loc body_end;   /* the closing '}' */
} lm_fe;

/* Set the error "file:line:col: error: msg" and unwind to lm_kernel_parse. */
_Noreturn void lm_fe_fail(lm_fe *fe, lm_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Validate the bytes (NUL, UTF-8, line length) and fill fe->toks. */
void lm_fe_lex(lm_fe *fe);
/* Parse the token stream: the header into fe->k, the body into fe->stmts. */
void lm_fe_parse(lm_fe *fe);
/* Type and shape check the statements, build the IR, fill the facts. */
void lm_fe_check(lm_fe *fe);
/* Refuse the kernel if an f32 value may overflow for its declared input
 * ranges (range.c). */
void lm_fe_ranges(lm_fe *fe);
/* Lex, parse, check and range one source: lm_kernel_parse without the
 * relaxed form. */
lm_status lm_fe_kernel_parse(const char *file, const char *src, size_t len,
                             lm_kernel **out, lm_error *err);
/* Fill k's relaxed form and counts (relax.c). */
void lm_fe_relax(lm_kernel *k);
/* Node id's expression as .lk text, operands by name, cut to fit buf. */
void lm_fe_node_str(const lm_kernel *k, int id, char *buf, size_t n);
/* Describe a token for a message ("'x'", "end of line"); arena string. */
const char *lm_fe_tok_desc(lm_fe *fe, const lm_tok *t);
/* Print a dim as written ("C", "2*H", "64") into buf. */
void lm_fe_dim_str(const lm_kernel *k, lm_dim d, char *buf, size_t n);
/* Reserved words: r, c, kernel, inf, nan and the function names. */
int lm_fe_reserved(const char *name, size_t len);
/* Grow an arena array: returns a copy of old with room for *cap*2 items. */
void *lm_fe_grow(lm_fe *fe, void *old, int n, int *cap, size_t size);

#endif
