/* Lexer of the kernel language.
 *
 * The source is first checked as bytes, front to back, so that the first
 * problem in the file is the one reported: a NUL byte (a binary file given
 * by mistake), a malformed UTF-8 sequence (anywhere, comments included) or a
 * line longer than LM_FE_MAX_LINE.  Only then is it cut into tokens.
 *
 * Newlines separate statements, except inside ( ) and [ ] and after a
 * token that cannot end a statement (a binary operator, '=', ','), where
 * they are plain white space; that lets long parameter lists, calls and
 * sums wrap without a continuation mark.  Runs of newlines become one TK_NL
 * token. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/frontend.h"

_Noreturn void lm_fe_fail(lm_fe *fe, lm_loc loc, const char *fmt, ...) {
  if (fe->err) {
    char msg[1600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lm_error_set(fe->err, LM_EINPUT, "%s:%d:%d: error: %s", fe->file, loc.line,
                 loc.col, msg);
  }
  longjmp(fe->fail, 1);
}

void *lm_fe_grow(lm_fe *fe, void *old, int n, int *cap, size_t size) {
  int ncap = *cap ? *cap * 2 : 16;
  void *p = lm_arena_alloc(fe->arena, (size_t)ncap * size);
  if (n)
    memcpy(p, old, (size_t)n * size);
  *cap = ncap;
  return p;
}

static const char *const reserved_words[] = {
    "r",       "c",   "kernel", "inf", "nan", "sum",  "max",   "min",  "fma",
    "where",   "abs", "neg",    "exp", "log", "sqrt", "rsqrt", "tanh", "erf",
    "sigmoid", "sin", "cos",    "pow", "f32", "f64",  "i32",
};

int lm_fe_reserved(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof reserved_words / sizeof *reserved_words; i++)
    if (strlen(reserved_words[i]) == len &&
        !memcmp(reserved_words[i], name, len))
      return 1;
  return 0;
}

const char *lm_fe_tok_desc(lm_fe *fe, const lm_tok *t) {
  if (t->kind == TK_EOF)
    return "end of file";
  if (t->kind == TK_NL)
    return "end of line";
  int n = t->len > 40 ? 40 : t->len;
  char *s = lm_arena_alloc(fe->arena, (size_t)n + 8);
  snprintf(s, (size_t)n + 8, "'%.*s%s'", n, t->p, t->len > n ? "..." : "");
  return s;
}

/* Length of the well-formed UTF-8 sequence at p (1..4), or 0 if malformed.
 * Overlong forms, surrogates and code points past U+10FFFF are rejected. */
static int utf8_len(const unsigned char *p, size_t left) {
  unsigned c = p[0];
  int n;
  unsigned min, cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, min = 0x80, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, min = 0x800, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, min = 0x10000, cp = c & 0x07;
  else
    return 0;
  if ((size_t)n > left)
    return 0;
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

static void check_bytes(lm_fe *fe) {
  const unsigned char *s = (const unsigned char *)fe->src;
  int line = 1;
  size_t bol = 0; /* offset of the current line's first byte */
  for (size_t i = 0; i < fe->len;) {
    lm_loc loc = {line, (int)(i - bol) + 1};
    if (i - bol >= LM_FE_MAX_LINE && s[i] != '\n' &&
        !(s[i] == '\r' && i + 1 < fe->len && s[i + 1] == '\n'))
      lm_fe_fail(fe, loc, "line too long (more than %d bytes)", LM_FE_MAX_LINE);
    if (s[i] == 0)
      lm_fe_fail(fe, loc,
                 "binary input (NUL byte); expected kernel source text");
    if (s[i] == '\n') {
      line++;
      bol = ++i;
      continue;
    }
    int n = utf8_len(s + i, fe->len - i);
    if (n == 0)
      lm_fe_fail(fe, loc, "invalid UTF-8 (byte 0x%02X)", s[i]);
    i += (size_t)n;
  }
}

static int is_ident_start(int c) { return isalpha(c) || c == '_'; }
static int is_ident_char(int c) { return isalnum(c) || c == '_'; }

/* Scan a number literal at p: digits [. digits] [e [+-] digits] or
 * . digits ...  Anything identifier-like glued to it makes it malformed. */
static int lex_number(lm_fe *fe, const char *p, const char *end, lm_tok *t) {
  const char *q = p;
  int is_int = 1, ok = 1;
  while (q < end && isdigit((unsigned char)*q))
    q++;
  if (q < end && *q == '.') {
    is_int = 0;
    q++;
    while (q < end && isdigit((unsigned char)*q))
      q++;
  }
  if (q < end && (*q == 'e' || *q == 'E')) {
    is_int = 0;
    q++;
    if (q < end && (*q == '+' || *q == '-'))
      q++;
    if (q >= end || !isdigit((unsigned char)*q))
      ok = 0;
    while (q < end && isdigit((unsigned char)*q))
      q++;
  }
  if (q < end && (is_ident_char((unsigned char)*q) || *q == '.')) {
    ok = 0;
    while (q < end && (is_ident_char((unsigned char)*q) || *q == '.'))
      q++;
  }
  int len = (int)(q - p);
  if (!ok)
    lm_fe_fail(fe, t->loc, "bad number literal '%.*s'", len > 40 ? 40 : len, p);
  char buf[512];
  if (len >= (int)sizeof buf)
    lm_fe_fail(fe, t->loc, "number literal too long");
  memcpy(buf, p, (size_t)len);
  buf[len] = 0;
  errno = 0;
  double v = strtod(buf, NULL);
  if (errno == ERANGE && isinf(v))
    lm_fe_fail(fe, t->loc, "number literal '%s' out of range", buf);
  t->num = v;
  t->is_int = is_int;
  return len;
}

/* A line ending in a binary operator, '=', ',' or '->' goes on: no
 * statement can end there, so the newline is only layout. */
static int continues(lm_tok_kind k) {
  switch (k) {
  case TK_NL:
  case TK_ASSIGN:
  case TK_COMMA:
  case TK_ARROW:
  case TK_PLUS:
  case TK_MINUS:
  case TK_STAR:
  case TK_SLASH:
  case TK_EQ:
  case TK_NE:
  case TK_LT:
  case TK_LE:
  case TK_GT:
  case TK_GE:
  case TK_AND:
  case TK_OR:
  case TK_NOT:
    return 1;
  default:
    return 0;
  }
}

void lm_fe_lex(lm_fe *fe) {
  check_bytes(fe);
  const char *s = fe->src, *end = fe->src + fe->len;
  int cap = 0, n = 0, depth = 0;
  lm_tok *toks = NULL;
  int line = 1;
  const char *bol = s;
  for (const char *p = s;;) {
    while (p < end &&
           (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v'))
      p++;
    if (p < end && *p == '#') {
      while (p < end && *p != '\n')
        p++;
      continue;
    }
    if (n == cap)
      toks = lm_fe_grow(fe, toks, n, &cap, sizeof *toks);
    lm_tok *t = &toks[n];
    memset(t, 0, sizeof *t);
    t->p = p;
    t->loc = (lm_loc){line, (int)(p - bol) + 1};
    if (p >= end) {
      t->kind = TK_EOF;
      n++;
      break;
    }
    unsigned char c = (unsigned char)*p;
    if (c == '\n') {
      line++;
      bol = ++p;
      if (depth == 0 && n > 0 && !continues(toks[n - 1].kind)) {
        t->kind = TK_NL;
        t->len = 1;
        n++;
      }
      continue;
    }
    int len = 1;
    if (is_ident_start(c)) {
      while (p + len < end && is_ident_char((unsigned char)p[len]))
        len++;
      t->kind = TK_IDENT;
    } else if (isdigit(c) ||
               (c == '.' && p + 1 < end && isdigit((unsigned char)p[1]))) {
      len = lex_number(fe, p, end, t);
      t->kind = TK_NUM;
    } else {
      char d = p + 1 < end ? p[1] : 0;
      switch (c) {
      case '(':
        t->kind = TK_LPAREN;
        depth++;
        break;
      case ')':
        t->kind = TK_RPAREN;
        depth -= depth > 0;
        break;
      case '[':
        t->kind = TK_LBRACK;
        depth++;
        break;
      case ']':
        t->kind = TK_RBRACK;
        depth -= depth > 0;
        break;
      case '{':
        t->kind = TK_LBRACE;
        break;
      case '}':
        t->kind = TK_RBRACE;
        break;
      case ',':
        t->kind = TK_COMMA;
        break;
      case ';':
        t->kind = TK_SEMI;
        break;
      case '+':
        t->kind = TK_PLUS;
        break;
      case '*':
        t->kind = TK_STAR;
        break;
      case '/':
        t->kind = TK_SLASH;
        break;
      case ':':
        t->kind = d == ':' ? TK_DCOLON : TK_COLON;
        len = d == ':' ? 2 : 1;
        break;
      case '-':
        t->kind = d == '>' ? TK_ARROW : TK_MINUS;
        len = d == '>' ? 2 : 1;
        break;
      case '=':
        t->kind = d == '=' ? TK_EQ : TK_ASSIGN;
        len = d == '=' ? 2 : 1;
        break;
      case '!':
        t->kind = d == '=' ? TK_NE : TK_NOT;
        len = d == '=' ? 2 : 1;
        break;
      case '<':
        t->kind = d == '=' ? TK_LE : TK_LT;
        len = d == '=' ? 2 : 1;
        break;
      case '>':
        t->kind = d == '=' ? TK_GE : TK_GT;
        len = d == '=' ? 2 : 1;
        break;
      case '&':
        if (d != '&')
          lm_fe_fail(fe, t->loc,
                     "unexpected character '&' (did you mean '&&'?)");
        t->kind = TK_AND;
        len = 2;
        break;
      case '|':
        if (d != '|')
          lm_fe_fail(fe, t->loc,
                     "unexpected character '|' (did you mean '||'?)");
        t->kind = TK_OR;
        len = 2;
        break;
      default:
        if (c >= 0x80) {
          int u = utf8_len((const unsigned char *)p, (size_t)(end - p));
          lm_fe_fail(fe, t->loc, "unexpected character '%.*s'", u, p);
        }
        if (isprint(c))
          lm_fe_fail(fe, t->loc, "unexpected character '%c'", c);
        lm_fe_fail(fe, t->loc, "unexpected control character 0x%02X", c);
      }
    }
    t->len = len;
    p += len;
    n++;
  }
  fe->toks = toks;
  fe->ntoks = n;
  fe->pos = 0;
}
