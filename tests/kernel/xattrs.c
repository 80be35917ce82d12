/* Guest-side helper of the kernel harness: lists the extended attributes of each path given.
 * Busybox has no getfattr.  Built statically by harness.py (gcc -static) into the initramfs.
 * Output, one line per attribute: "@@J2H@@X <hex path> <name> <hex value>".  Paths and values
 * are hex so that any byte survives the console. */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/xattr.h>

static void hex(const unsigned char *p, size_t n) {
    if (n == 0) { fputs("-", stdout); return; }
    for (size_t i = 0; i < n; i++) printf("%02x", p[i]);
}

int main(int argc, char **argv) {
    static char names[65536];
    static unsigned char value[65536];
    for (int a = 1; a < argc; a++) {
        ssize_t len = llistxattr(argv[a], names, sizeof names);
        if (len < 0) {
            fputs("@@J2H@@XERR ", stdout);
            hex((const unsigned char *)argv[a], strlen(argv[a]));
            putchar('\n');
            continue;
        }
        for (char *n = names; n < names + len; n += strlen(n) + 1) {
            ssize_t vl = lgetxattr(argv[a], n, value, sizeof value);
            fputs("@@J2H@@X ", stdout);
            hex((const unsigned char *)argv[a], strlen(argv[a]));
            printf(" %s ", n);
            if (vl < 0) fputs("ERROR", stdout); else hex(value, (size_t)vl);
            putchar('\n');
        }
    }
    return 0;
}
