// sluice.hpp (the C++ layer) must compile alone as C++20, included first and twice.
#include <sluice/sluice.hpp>

int main() { return 0; }
