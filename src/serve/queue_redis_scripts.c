/* queue_redis_scripts.c: the Redis engine's Lua scripts, one per change of a job's state, each run
 * atomically by Redis (docs/queue-redis.md says what each does and why a crash between two of them
 * loses nothing). ARGV[1] is always the key prefix P. A job's entry is on one of two streams read
 * by the group `workers`: P:jobs (new jobs) or P:alone (jobs re-queued after their holder died,
 * handed over only to a take that runs nothing beside them); the job's hash names it (`stream`). */
#include "serve/queue_redis.h"

/* finish(): the one transition to a finished state: state, outcome and time in the job's hash,
 * the counters, the finished set (for stats of kept jobs), the expiry, the batch's expiry once
 * its last job is finished, and the token that wakes every long-poll get of the job. */
#define LUA_FINISH                                                                                         \
    "local function finish(P,id,old,new,outcome,now,keep)\n"                                               \
    " local jk=P..':job:'..id\n"                                                                           \
    " redis.call('HSET',jk,'state',new,'finished_us',now)\n"                                               \
    " if outcome then redis.call('HSET',jk,'outcome',outcome) end\n"                                       \
    " redis.call('HINCRBY',P..':counts',old,-1)\n"                                                         \
    " redis.call('ZADD',P..':finished:'..new,now,id)\n"                                                    \
    " redis.call('EXPIRE',jk,keep)\n"                                                                      \
    " local b=redis.call('HGET',jk,'batch')\n"                                                             \
    " if b and b~='' and redis.call('HINCRBY',P..':batchopen',b,-1)<=0 then\n"                             \
    "  redis.call('HDEL',P..':batchopen',b) redis.call('EXPIRE',P..':batch:'..b,keep) end\n"               \
    " local nk=P..':notify:'..id\n"                                                                        \
    " redis.call('RPUSH',nk,'1') redis.call('EXPIRE',nk,keep)\n"                                           \
    "end\n"

/* unlink(): acknowledges and deletes a job's stream entry sid, on the stream its hash names. */
#define LUA_UNLINK                                                                                         \
    "local function unlink(P,jk,sid)\n"                                                                    \
    " local s=redis.call('HGET',jk,'stream')\n"                                                            \
    " local sk=P..':'..((s=='alone') and 'alone' or 'jobs')\n"                                             \
    " redis.call('XACK',sk,'" REDIS_GROUP "',sid) redis.call('XDEL',sk,sid)\n"                           \
    "end\n"

/* died(): the consumer holding entry sid of stream name (with job id) died. A finished job's entry
 * goes; else the death is charged when the job was running alone, and the job is re-queued on
 * P:alone, or, at max deaths, {sid, id, name, deaths, deliveries} is returned for its dead letter
 * (the entry then stays pending under the caller, who records it with DEAD). */
#define LUA_DIED                                                                                           \
    "local function died(P,name,sid,id,max)\n"                                                             \
    " local sk=P..':'..name local jk=P..':job:'..id\n"                                                     \
    " local st=redis.call('HGET',jk,'state')\n"                                                            \
    " if st~='queued' and st~='running' then\n"                                                            \
    "  redis.call('XACK',sk,'" REDIS_GROUP "',sid) redis.call('XDEL',sk,sid) return nil end\n"           \
    " local deaths=tonumber(redis.call('HGET',jk,'deaths') or '0') or 0\n"                                 \
    " if st=='running' and redis.call('HGET',jk,'alone')=='1' then\n"                                      \
    "  deaths=deaths+1 redis.call('HSET',jk,'deaths',deaths) end\n"                                        \
    " if deaths>=max then\n"                                                                               \
    "  return {sid,id,name,deaths,tonumber(redis.call('HGET',jk,'deliveries') or '0') or 0} end\n"         \
    " redis.call('XACK',sk,'" REDIS_GROUP "',sid) redis.call('XDEL',sk,sid)\n"                           \
    " if st=='running' then\n"                                                                             \
    "  redis.call('HINCRBY',P..':counts','running',-1) redis.call('HINCRBY',P..':counts','queued',1) end\n" \
    " redis.call('HSET',jk,'state','queued','alone','1','consumer','','stream','alone',\n"                 \
    "  'sid',redis.call('XADD',P..':alone','*','id',id))\n"                                                \
    " return nil\n"                                                                                        \
    "end\n"

const char *const redis_scripts[SCRIPT_COUNT_] = {
    /* SUBMIT max_depth now keep, then per job: id batch cache_key item submitted_us result. All or
     * none: {0, e1, e2, ...} (e: 0 queued, 1 known with the same item and key), {2} the queue would
     * pass max_depth, {3, i} job i's id is known with another item or key. The checks write
     * nothing, and the first write is a job's HSET: Redis over its maxmemory refuses a script at
     * its first write of a command that may grow memory (after one write it cannot stop), so a
     * full Redis refuses the whole request and queues nothing. (A first write such as ZREM, which
     * Redis lets through at maxmemory, would let the rest of the script grow it past the limit.) */
    [SCRIPT_SUBMIT] = LUA_FINISH
        "local P=ARGV[1] local n=(#ARGV-4)/6 local seen={} local out={0} local new=0\n"
        "for i=0,n-1 do local b=5+i*6 local id=ARGV[b] local it,ck\n"
        " if seen[id] then it,ck=seen[id][1],seen[id][2]\n"
        " else local h=redis.call('HMGET',P..':job:'..id,'item','cache_key') it,ck=h[1],h[2] end\n"
        " if it then\n"
        "  if it~=ARGV[b+3] or ck~=ARGV[b+2] then return {3,i} end\n"
        "  out[i+2]=1\n"
        " else seen[id]={ARGV[b+3],ARGV[b+2]} out[i+2]=0 if ARGV[b+5]=='' then new=new+1 end end\n"
        "end\n"
        "local c=redis.call('HMGET',P..':counts','queued','running')\n"
        "if new>0 and (tonumber(c[1]) or 0)+(tonumber(c[2]) or 0)+new>tonumber(ARGV[2]) then return {2} end\n"
        "for i=0,n-1 do if out[i+2]==0 then local b=5+i*6 local id=ARGV[b] local jk=P..':job:'..id\n"
        " redis.call('HSET',jk,'state','queued','batch',ARGV[b+1],'cache_key',ARGV[b+2],'item',ARGV[b+3],\n"
        "  'submitted_us',ARGV[b+4],'deliveries','0','deaths','0','alone','0','stream','jobs')\n"
        " redis.call('ZREM',P..':finished:done',id) redis.call('ZREM',P..':finished:failed',id)\n"
        " redis.call('ZREM',P..':finished:cancelled',id) redis.call('DEL',P..':notify:'..id)\n"
        " redis.call('HINCRBY',P..':counts','queued',1) redis.call('HINCRBY',P..':counts','submitted',1)\n"
        " if ARGV[b+1]~='' then local bk=P..':batch:'..ARGV[b+1]\n"
        "  redis.call('RPUSH',bk,id) redis.call('PERSIST',bk) redis.call('HINCRBY',P..':batchopen',ARGV[b+1],1) end\n"
        " if ARGV[b+5]~='' then finish(P,id,'queued','done',ARGV[b+5],ARGV[3],ARGV[4])\n"
        " else redis.call('HSET',jk,'sid',redis.call('XADD',P..':jobs','*','id',id)) end\n"
        "end end\n"
        "for _,s in ipairs({'done','failed','cancelled'}) do\n"
        " redis.call('ZREMRANGEBYSCORE',P..':finished:'..s,'-inf',tonumber(ARGV[3])-tonumber(ARGV[4])*1000000) end\n"
        "return out\n",
    /* MARK id sid consumer stream: hands a delivered entry over as running: {item, batch,
     * cache_key, submitted_us, alone, deliveries}; nil (and the entry acknowledged and deleted)
     * when its job is finished, cancelled or gone */
    [SCRIPT_MARK] =
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2] local sk=P..':'..ARGV[5]\n"
        "local st=redis.call('HGET',jk,'state')\n"
        "if st~='queued' and st~='running' then\n"
        " redis.call('XACK',sk,'" REDIS_GROUP "',ARGV[3]) redis.call('XDEL',sk,ARGV[3]) return false end\n"
        "if st=='queued' then redis.call('HINCRBY',P..':counts','queued',-1) redis.call('HINCRBY',P..':counts','running',1) end\n"
        "local d=redis.call('HINCRBY',jk,'deliveries',1)\n"
        "redis.call('HSET',jk,'state','running','consumer',ARGV[4])\n"
        "if d>1 then redis.call('HINCRBY',P..':counts','redeliveries',1) end\n"
        "local h=redis.call('HMGET',jk,'item','batch','cache_key','submitted_us','alone')\n"
        "h[6]=d\n"
        "return h\n",
    /* RECOVER consumer min_idle_ms max_deaths: re-queues (died) the entries of both streams idle that
     * long, claiming each for the caller first: {dead, waiting}, dead the first entry due for its
     * dead letter (or nil), waiting the jobs queued on P:alone and not yet handed over */
    [SCRIPT_RECOVER] = LUA_DIED
        "local P=ARGV[1]\n"
        "for _,name in ipairs({'jobs','alone'}) do local sk=P..':'..name\n"
        " for k=1,64 do\n"
        "  local r=redis.call('XAUTOCLAIM',sk,'" REDIS_GROUP "',ARGV[2],ARGV[3],'0-0','COUNT',1)\n"
        "  local e=r[2][1]\n"
        "  if not e then break end\n"
        "  local id=nil\n"
        "  if e[2] then for f=1,#e[2],2 do if e[2][f]=='id' then id=e[2][f+1] end end end\n"
        "  if id then local d=died(P,name,e[1],id,tonumber(ARGV[4])) if d then return {d,0} end\n"
        "  else redis.call('XACK',sk,'" REDIS_GROUP "',e[1]) redis.call('XDEL',sk,e[1]) end\n"
        " end\n"
        "end\n"
        "local p=redis.call('XPENDING',P..':alone','" REDIS_GROUP "')\n"
        "return {false,redis.call('XLEN',P..':alone')-(tonumber(p[1]) or 0)}\n",
    /* COMPLETE id state outcome now keep: 0 recorded, 1 finished already (kept), -1 unknown */
    [SCRIPT_COMPLETE] = LUA_FINISH LUA_UNLINK
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2]\n"
        "local st=redis.call('HGET',jk,'state')\n"
        "if not st then return -1 end\n"
        "local r=1\n"
        "if st=='queued' or st=='running' then finish(P,ARGV[2],st,ARGV[3],ARGV[4],ARGV[5],ARGV[6]) r=0 end\n"
        "local sid=redis.call('HGET',jk,'sid')\n"
        "if sid then unlink(P,jk,sid) end\n"
        "return r\n",
    /* DEAD id sid stream deaths deliveries result now keep: records the runtime_error result, then
     * the dead letter */
    [SCRIPT_DEAD] = LUA_FINISH
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2] local st=redis.call('HGET',jk,'state')\n"
        "if st=='queued' or st=='running' then\n"
        " redis.call('HSET',jk,'deaths',ARGV[5])\n"
        " finish(P,ARGV[2],st,'done',ARGV[7],ARGV[8],ARGV[9])\n"
        " redis.call('XADD',P..':dead','*','id',ARGV[2],'deliveries',ARGV[6],'result',ARGV[7])\n"
        " redis.call('HINCRBY',P..':counts','dead_letters',1) end\n"
        "local sk=P..':'..ARGV[4]\n"
        "redis.call('XACK',sk,'" REDIS_GROUP "',ARGV[3]) redis.call('XDEL',sk,ARGV[3])\n"
        "return 0\n",
    /* CANCEL id now keep: the state it had, or nil if unknown. A queued job's entry goes now; a
     * running one's stays pending until its consumer completes it (or its death is found). */
    [SCRIPT_CANCEL] = LUA_FINISH LUA_UNLINK
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2]\n"
        "local st=redis.call('HGET',jk,'state')\n"
        "if not st then return false end\n"
        "if st=='queued' or st=='running' then finish(P,ARGV[2],st,'cancelled',nil,ARGV[3],ARGV[4]) end\n"
        "local sid=redis.call('HGET',jk,'sid')\n"
        "if st=='queued' and sid then unlink(P,jk,sid) end\n"
        "return st\n",
    /* BEAT consumer report now keep_s: the report, and the idle time of the consumer's own pending
     * entries reset (JUSTID: no delivery counted), so that a live consumer's long job is not taken
     * for its death */
    [SCRIPT_BEAT] =
        "local P=ARGV[1]\n"
        "redis.call('SET',P..':worker:'..ARGV[2],ARGV[3],'EX',ARGV[5])\n"
        "redis.call('ZADD',P..':workers',ARGV[4],ARGV[2])\n"
        "redis.call('ZREMRANGEBYSCORE',P..':workers','-inf',tonumber(ARGV[4])-tonumber(ARGV[5])*1000000)\n"
        "local n=0\n"
        "for _,name in ipairs({'jobs','alone'}) do local sk=P..':'..name\n"
        " local p=redis.call('XPENDING',sk,'" REDIS_GROUP "','-','+',1000,ARGV[2])\n"
        " local a={sk,'" REDIS_GROUP "',ARGV[2],0} for _,e in ipairs(p) do a[#a+1]=e[1] end\n"
        " if #a>4 then n=n+#a-4 a[#a+1]='JUSTID' redis.call('XCLAIM',unpack(a)) end\n"
        "end\n"
        "return n\n",
    /* STATS now keep: {queued, running, done, failed, cancelled, redeliveries, dead_letters} */
    [SCRIPT_STATS] =
        "local P=ARGV[1] local out=redis.call('HMGET',P..':counts','queued','running')\n"
        "for _,s in ipairs({'done','failed','cancelled'}) do local k=P..':finished:'..s\n"
        " redis.call('ZREMRANGEBYSCORE',k,'-inf',tonumber(ARGV[2])-tonumber(ARGV[3])*1000000)\n"
        " out[#out+1]=redis.call('ZCARD',k) end\n"
        "local c=redis.call('HMGET',P..':counts','redeliveries','dead_letters')\n"
        "out[#out+1]=c[1] out[#out+1]=c[2]\n"
        "for i=1,7 do out[i]=tonumber(out[i]) or 0 end\n"
        "return out\n",
    /* RELEASE consumer max_deaths: consumer (NAME@INSTANCE) starts: every other instance of NAME
     * died. Their pending entries are claimed and re-queued (died), their consumers deleted from
     * the group and their reports removed: the list of entries due for their dead letter. */
    [SCRIPT_RELEASE] = LUA_DIED
        "local P=ARGV[1] local me=ARGV[2] local name=string.sub(me,1,#me-17) local dead={}\n"
        "local function other(c)\n"
        " return c~=me and #c==#me and string.sub(c,1,#name+1)==name..'@' and\n"
        "  string.match(string.sub(c,#name+2),'^[0-9a-f]+$')~=nil end\n"
        "for _,sname in ipairs({'jobs','alone'}) do local sk=P..':'..sname\n"
        " for _,c in ipairs(redis.call('XINFO','CONSUMERS',sk,'" REDIS_GROUP "')) do\n"
        "  local cname=nil for f=1,#c,2 do if c[f]=='name' then cname=c[f+1] end end\n"
        "  if cname and other(cname) then\n"
        "   for _,e in ipairs(redis.call('XPENDING',sk,'" REDIS_GROUP "','-','+',100000,cname)) do\n"
        "    local got=redis.call('XCLAIM',sk,'" REDIS_GROUP "',me,0,e[1])\n"
        "    local id=nil\n"
        "    if got[1] and got[1][2] then for f=1,#got[1][2],2 do if got[1][2][f]=='id' then id=got[1][2][f+1] end end end\n"
        "    if id then local d=died(P,sname,e[1],id,tonumber(ARGV[3])) if d then dead[#dead+1]=d end\n"
        "    else redis.call('XACK',sk,'" REDIS_GROUP "',e[1]) redis.call('XDEL',sk,e[1]) end\n"
        "   end\n"
        "   redis.call('XGROUP','DELCONSUMER',sk,'" REDIS_GROUP "',cname)\n"
        "  end\n"
        " end\n"
        "end\n"
        "for _,c in ipairs(redis.call('ZRANGE',P..':workers',0,-1)) do\n"
        " if other(c) then redis.call('ZREM',P..':workers',c) redis.call('DEL',P..':worker:'..c) end end\n"
        "return dead\n",
};
