/* ELF symbol tables read from the module's file (elfsym.h). Each file is mapped read-only once
 * and kept: diagnostics are rare and a verdict usually symbolizes several frames per module.
 * Only 64-bit native-endian ELF is read; anything else is "no symbol". */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elfsym.h"

#define NCG_ELFSYM_CACHE 32

struct symtab {
    const Elf64_Sym *sym;
    size_t n;
    const char *str;
    size_t strsz;
};

struct module {
    char path[512];
    dev_t dev;
    ino_t ino;
    int ok;
    const unsigned char *map;
    size_t len;
    struct symtab tab[2]; /* .symtab, .dynsym */
};

static struct module cache[NCG_ELFSYM_CACHE];
static int ncache, next_evict;

static int in_file(const struct module *m, uint64_t off, uint64_t size)
{
    return off <= m->len && size <= m->len - off;
}

static void load_tables(struct module *m)
{
    const Elf64_Ehdr *eh = (const void *)m->map;
    if (m->len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return;
    const Elf64_Shdr *sh = (const void *)(m->map + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        int slot = sh[i].sh_type == SHT_SYMTAB ? 0 : sh[i].sh_type == SHT_DYNSYM ? 1 : -1;
        if (slot < 0 || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym))
            continue;
        const Elf64_Shdr *ss = &sh[sh[i].sh_link];
        if (sh[i].sh_type == SHT_NOBITS || ss->sh_type != SHT_STRTAB ||
            !in_file(m, sh[i].sh_offset, sh[i].sh_size) || !in_file(m, ss->sh_offset, ss->sh_size))
            continue;
        m->tab[slot].sym = (const void *)(m->map + sh[i].sh_offset);
        m->tab[slot].n = sh[i].sh_size / sizeof(Elf64_Sym);
        m->tab[slot].str = (const char *)(m->map + ss->sh_offset);
        m->tab[slot].strsz = ss->sh_size;
    }
}

static struct module *module_get(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    for (int i = 0; i < ncache; i++)
        if (cache[i].dev == st.st_dev && cache[i].ino == st.st_ino && !strcmp(cache[i].path, path))
            return cache[i].ok ? &cache[i] : NULL;
    struct module *m;
    if (ncache < NCG_ELFSYM_CACHE) {
        m = &cache[ncache++];
    } else { /* a full cache: round-robin eviction */
        m = &cache[next_evict];
        next_evict = (next_evict + 1) % NCG_ELFSYM_CACHE;
        if (m->map)
            munmap((void *)m->map, m->len);
    }
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->map = p;
            m->len = (size_t)st.st_size;
            load_tables(m);
            m->ok = 1;
        }
    }
    close(fd);
    return m->ok ? m : NULL;
}

/* The best symbol of one table containing vaddr: a function before other types, a global
 * before a local or weak alias at the same place. */
static const Elf64_Sym *find_in(const struct symtab *t, uint64_t vaddr)
{
    const Elf64_Sym *best = NULL;
    int best_score = -1;
    for (size_t i = 0; i < t->n; i++) {
        const Elf64_Sym *s = &t->sym[i];
        int type = ELF64_ST_TYPE(s->st_info);
        if (s->st_shndx == SHN_UNDEF || s->st_size == 0 || s->st_name == 0 ||
            s->st_name >= t->strsz)
            continue;
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        if (vaddr < s->st_value || vaddr - s->st_value >= s->st_size)
            continue;
        int score = (type == STT_FUNC || type == STT_GNU_IFUNC) * 2 +
                    (ELF64_ST_BIND(s->st_info) == STB_GLOBAL);
        if (score > best_score) {
            best = s;
            best_score = score;
        }
    }
    return best;
}

int ncg_elfsym_lookup(const char *path, uint64_t vaddr, char *name, size_t cap, uint64_t *off)
{
    struct module *m = path && *path ? module_get(path) : NULL;
    if (!m)
        return -1;
    for (int k = 0; k < 2; k++) {
        const Elf64_Sym *s = find_in(&m->tab[k], vaddr);
        if (!s)
            continue;
        const char *nm = m->tab[k].str + s->st_name;
        size_t max = m->tab[k].strsz - s->st_name;
        snprintf(name, cap, "%.*s", (int)strnlen(nm, max), nm);
        *off = vaddr - s->st_value;
        return 0;
    }
    return -1;
}
