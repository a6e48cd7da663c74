//! The emulated file server's read caches: an in-memory cache and an NVMe cache, each an LRU
//! over the volumes' blocks. The NVMe cache holds what the memory cache evicts (a victim
//! cache): a block read from it moves back to memory. Writes land in memory. Only block
//! identities are kept, never data: the cache decides what a request *costs*, the backend
//! still serves the bytes.

use std::collections::HashMap;

/// A block: (volume id, block index).
pub type Block = (u64, u64);

const NIL: usize = usize::MAX;

struct Node {
    key: Block,
    prev: usize,
    next: usize,
}

/// A least-recently-used set of blocks with a fixed capacity (in blocks).
pub struct Lru {
    cap: usize,
    map: HashMap<Block, usize>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used.
    tail: usize,
}

impl Lru {
    /// An empty LRU holding at most `cap` blocks (0: holds nothing).
    pub fn new(cap: usize) -> Lru {
        Lru {
            cap,
            map: HashMap::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn contains(&self, k: &Block) -> bool {
        self.map.contains_key(k)
    }

    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.nodes[i].prev, self.nodes[i].next);
        if p == NIL {
            self.head = n;
        } else {
            self.nodes[p].next = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.nodes[n].prev = p;
        }
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Marks `k` most recently used; false if absent.
    pub fn touch(&mut self, k: &Block) -> bool {
        match self.map.get(k) {
            Some(&i) => {
                self.unlink(i);
                self.push_front(i);
                true
            }
            None => false,
        }
    }

    /// Removes `k`; false if absent.
    pub fn remove(&mut self, k: &Block) -> bool {
        match self.map.remove(k) {
            Some(i) => {
                self.unlink(i);
                self.free.push(i);
                true
            }
            None => false,
        }
    }

    /// Inserts `k` as most recently used (or touches it); returns the block evicted to make
    /// room, if any. With capacity 0 the block itself is "evicted" at once.
    pub fn insert(&mut self, k: Block) -> Option<Block> {
        if self.touch(&k) {
            return None;
        }
        if self.cap == 0 {
            return Some(k);
        }
        let evicted = if self.map.len() >= self.cap {
            let t = self.tail;
            let old = self.nodes[t].key;
            self.remove(&old);
            Some(old)
        } else {
            None
        };
        let node = Node {
            key: k,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.map.insert(k, i);
        self.push_front(i);
        evicted
    }
}

/// Where a block was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Memory,
    Nvme,
    Miss,
}

/// The two cache levels.
pub struct Caches {
    pub memory: Lru,
    pub nvme: Lru,
}

impl Caches {
    pub fn new(memory_blocks: usize, nvme_blocks: usize) -> Caches {
        Caches {
            memory: Lru::new(memory_blocks),
            nvme: Lru::new(nvme_blocks),
        }
    }

    /// Puts `k` in memory, demoting what memory evicts to NVMe.
    fn put_in_memory(&mut self, k: Block) {
        if let Some(out) = self.memory.insert(k) {
            self.nvme.insert(out);
        }
    }

    /// A read of block `k`: where it was found; afterwards it is in memory.
    pub fn read(&mut self, k: Block) -> Hit {
        if self.memory.touch(&k) {
            return Hit::Memory;
        }
        let hit = if self.nvme.remove(&k) {
            Hit::Nvme
        } else {
            Hit::Miss
        };
        self.put_in_memory(k);
        hit
    }

    /// A write of block `k`: it lands in memory (an older copy in NVMe is dropped).
    pub fn write(&mut self, k: Block) {
        self.nvme.remove(&k);
        self.put_in_memory(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recent() {
        let mut l = Lru::new(3);
        for b in 0..3 {
            assert_eq!(l.insert((1, b)), None);
        }
        assert!(l.touch(&(1, 0)));
        assert_eq!(l.insert((1, 3)), Some((1, 1)));
        assert_eq!(l.insert((1, 4)), Some((1, 2)));
        assert_eq!(l.insert((1, 5)), Some((1, 0)));
        assert_eq!(l.len(), 3);
        assert!(l.remove(&(1, 4)));
        assert!(!l.remove(&(1, 4)));
        assert_eq!(l.insert((2, 0)), None, "a freed slot is reused");
        assert_eq!(l.len(), 3);
        let mut z = Lru::new(0);
        assert_eq!(z.insert((1, 1)), Some((1, 1)));
        assert!(z.is_empty());
    }

    #[test]
    fn nvme_is_a_victim_cache() {
        // Memory 2 blocks, NVMe 4: write 4 blocks, the first two go to NVMe.
        let mut c = Caches::new(2, 4);
        for b in 0..4 {
            c.write((7, b));
        }
        assert_eq!(c.read((7, 3)), Hit::Memory);
        assert_eq!(c.read((7, 0)), Hit::Nvme);
        // Block 0 moved to memory; memory's LRU (block 2) went to NVMe.
        assert_eq!(c.read((7, 2)), Hit::Nvme);
        assert_eq!(c.read((7, 9)), Hit::Miss);
        assert_eq!(c.read((7, 9)), Hit::Memory);
        // A sequential scan twice the memory size, within memory + NVMe: all hits.
        let mut c = Caches::new(4, 16);
        for b in 0..8 {
            c.write((1, b));
        }
        for _ in 0..3 {
            for b in 0..8 {
                assert_ne!(c.read((1, b)), Hit::Miss, "block {b}");
            }
        }
        // Beyond memory + NVMe: a sequential scan misses every time (LRU).
        let mut c = Caches::new(2, 2);
        for b in 0..5 {
            c.write((1, b));
        }
        for b in 0..5 {
            assert_eq!(c.read((1, b)), Hit::Miss, "block {b}");
        }
    }
}
