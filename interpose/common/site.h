/* The text of a call site, "NAME+0xOFF (MODULE+0xMODOFF) at FILE:LINE", and the one rule that
 * shortens it (pure: the symbolizer, the checker's diagnostics and `ncclguard report` use it): a
 * C++ name's detail gives way (clone suffixes, template arguments, parameter lists), then the
 * module part; an identifier is never cut. Past a width the text is long rather than cut; only a
 * hard bound (a buffer, the wire's 128 bytes) lets the offset, file:line, then whole leading
 * components of the qualified name give way. */
#ifndef NCG_SITE_H
#define NCG_SITE_H

#include <stddef.h>
#include <stdint.h>

/* A call site's width on a terminal line (bytes): the wire's bound for a site, NUL excluded. */
#define NCG_SITE_WIDTH 127u
/* Room for a site with its whole demangled name (a report's call_site), NUL included. */
#define NCG_SITE_FULL 4096u

/* site (as ncg_site_compose writes it, or any text) into out (cap bytes, NUL included), at most
 * width bytes where it can be: the name's detail gives way level by level (ncg_site_simplify,
 * levels 1 to 4), then the module part " (MODULE+0xMODOFF)". Never cut inside an identifier:
 * when that is still longer than width it stays so, up to cap - 1 bytes. Past cap - 1 only, in
 * this order: the offset, file:line, both, then the qualified name's leading components as a
 * whole "…::" each; then "MODULE+0xMODOFF at FILE:LINE" (no name); then file:line alone; last
 * the text cut at its end (a buffer of a few bytes). What follows file:line (" (in a CUDA graph
 * replay)") stays with the name. Bytes that are not printable UTF-8 are written as '?', one per
 * byte; no cut splits a character. Returns strlen(out). Pure: any thread, no allocation. */
size_t ncg_site_fit(char *out, size_t cap, const char *site, size_t width);

/* A call site's text into buf (cap bytes, NUL included) from its parts: "NAME+0xOFF
 * (MODULE+0xMODOFF) at SRCLINE"; "MODULE+0xMODOFF at SRCLINE" when name is NULL or ""; no
 * " at SRCLINE" when srcline is NULL or "". What does not fit cap gives way as in
 * ncg_site_fit(..., cap - 1). Returns strlen(buf). Pure: any thread, no allocation. */
size_t ncg_site_compose(char *buf, size_t cap, const char *name, uint64_t off, const char *module,
                        uint64_t modoff, const char *srcline);

/* A demangled C++ name made shorter, at a level: 1 drops the " [clone .isra.0]" suffixes of
 * compiler-made copies; 2 also writes template argument lists nested in another as "<…>"; 3
 * also drops a function template's return type and writes the function's parameter list as
 * "(…)"; 4 also writes every template argument list as "<…>". Identifiers stay whole, and so do
 * "(anonymous namespace)" and a lambda's "{lambda(int)#1}". A list of 3 bytes or less stays
 * ("…" is 3 bytes). Levels 2 to 4 need balanced brackets (operator<, operator() and the like
 * are read as names), else they leave the name as level 1 does. Writes at most cap bytes (NUL
 * included) as snprintf does and returns the length of the whole result; bytes as
 * ncg_site_fit writes them. Pure: any thread, no allocation. */
size_t ncg_site_simplify(char *out, size_t cap, const char *name, int level);

#endif
